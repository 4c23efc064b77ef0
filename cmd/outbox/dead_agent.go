package main

import (
	"context"
	"net/url"

	"github.com/outboxhq/outbox/pkg/agent"
)

// agentDead manages dead letters through a running agent's /v1/dead routes.
type agentDead struct{ c *agentClient }

func (agentDead) close() {}

func (d agentDead) list(ctx context.Context) ([]agent.DeadBatch, error) {
	var res agent.DeadList
	err := d.c.do(ctx, "GET", "/v1/dead", nil, &res)
	return res.Batches, err
}

func (d agentDead) get(ctx context.Context, id string) (agent.DeadBatch, error) {
	var v agent.DeadBatch
	err := d.c.do(ctx, "GET", "/v1/dead/"+url.PathEscape(id), nil, &v)
	return v, err
}

// deadRequest names the batches, or all of them when ids is empty.
func deadRequest(ids []string) agent.DeadRequest {
	return agent.DeadRequest{IDs: ids, All: len(ids) == 0}
}

func (d agentDead) replay(ctx context.Context, ids []string) (int, error) {
	var res agent.DeadReplayResult
	err := d.c.do(ctx, "POST", "/v1/dead/replay", deadRequest(ids), &res)
	return res.Events, err
}

func (d agentDead) purge(ctx context.Context, ids []string) (int, error) {
	var res agent.DeadPurgeResult
	err := d.c.do(ctx, "POST", "/v1/dead/purge", deadRequest(ids), &res)
	return res.Batches, err
}
