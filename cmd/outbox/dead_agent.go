package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// agentDead manages dead letters through a running agent's /v1/dead routes.
type agentDead struct{ c *agentClient }

func (agentDead) close() {}

func (d agentDead) list(ctx context.Context) ([]deadView, error) {
	var raw json.RawMessage
	if err := d.c.do(ctx, "GET", "/v1/dead", nil, &raw); err != nil {
		return nil, err
	}
	var list []deadView
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var wrapped struct {
		Batches []deadView `json:"batches"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return nil, fmt.Errorf("the agent's dead-letter list is not the expected JSON: %w", err)
	}
	return wrapped.Batches, nil
}

func (d agentDead) get(ctx context.Context, id string) (deadView, error) {
	var v deadView
	err := d.c.do(ctx, "GET", "/v1/dead/"+url.PathEscape(id), nil, &v)
	return v, err
}

// idsBody is the body of replay and purge: {"ids":[...]}, or {"all":true} with no ids.
func idsBody(ids []string) map[string]any {
	if len(ids) == 0 {
		return map[string]any{"all": true}
	}
	return map[string]any{"ids": ids}
}

func (d agentDead) replay(ctx context.Context, ids []string) (int, error) {
	var res struct {
		Replayed int `json:"replayed"`
		Events   int `json:"events"`
	}
	if err := d.c.do(ctx, "POST", "/v1/dead/replay", idsBody(ids), &res); err != nil {
		return 0, err
	}
	return max(res.Replayed, res.Events), nil
}

func (d agentDead) purge(ctx context.Context, ids []string) (int, error) {
	var res struct {
		Purged  int `json:"purged"`
		Batches int `json:"batches"`
	}
	if err := d.c.do(ctx, "POST", "/v1/dead/purge", idsBody(ids), &res); err != nil {
		return 0, err
	}
	return max(res.Purged, res.Batches), nil
}
