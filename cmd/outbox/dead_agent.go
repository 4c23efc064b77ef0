package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// agentDead manages dead letters through a running agent's /v1/dead routes. A filter travels
// as uploader.DeadFilterText: its times resolved here, so "2h" means two hours before the
// command ran.
type agentDead struct{ c *agentClient }

func (agentDead) close() {}

func (d agentDead) list(ctx context.Context, f uploader.DeadFilter) ([]agent.DeadBatch, error) {
	q := url.Values{}
	for k, v := range uploader.DeadFilterText(f) {
		q.Set(k, v)
	}
	path := "/v1/dead"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var res agent.DeadList
	err := d.c.do(ctx, "GET", path, nil, &res)
	return res.Batches, err
}

func (d agentDead) get(ctx context.Context, id string) (agent.DeadBatch, error) {
	var v agent.DeadBatch
	err := d.c.do(ctx, "GET", "/v1/dead/"+url.PathEscape(id), nil, &v)
	return v, err
}

// deadRequest picks every batch f matches (all of them for the zero filter).
func deadRequest(f uploader.DeadFilter) agent.DeadRequest {
	t := uploader.DeadFilterText(f)
	return agent.DeadRequest{All: true, Source: t["source"], Since: t["since"], Until: t["until"], Status: t["status"], Reason: t["reason"]}
}

func (d agentDead) replay(ctx context.Context, ids []string) (int, error) {
	var res agent.DeadReplayResult
	err := d.c.do(ctx, "POST", "/v1/dead/replay", agent.DeadRequest{IDs: ids}, &res)
	return res.Events, err
}

func (d agentDead) replayMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error) {
	var res agent.DeadReplayResult
	err := d.c.do(ctx, "POST", "/v1/dead/replay", deadRequest(f), &res)
	return uploader.DeadResult{Batches: res.Batches, Events: res.Events}, err
}

func (d agentDead) purge(ctx context.Context, ids []string) (int, error) {
	var res agent.DeadPurgeResult
	err := d.c.do(ctx, "POST", "/v1/dead/purge", agent.DeadRequest{IDs: ids}, &res)
	return res.Batches, err
}

func (d agentDead) purgeMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error) {
	var res agent.DeadPurgeResult
	err := d.c.do(ctx, "POST", "/v1/dead/purge", deadRequest(f), &res)
	return uploader.DeadResult{Batches: res.Batches, Events: res.Events}, err
}

// offlineDead manages dead letters in a stopped agent's data directory.
// It converts with agent.NewDeadBatch, so both paths print the same.
type offlineDead struct{ o *uploader.Offline }

func (o offlineDead) close() { _ = o.o.Close() }

func (o offlineDead) list(_ context.Context, f uploader.DeadFilter) ([]agent.DeadBatch, error) {
	list, err := o.o.DeadLetters().ListMatching(f)
	out := make([]agent.DeadBatch, 0, len(list))
	for _, d := range list {
		out = append(out, agent.NewDeadBatch(d))
	}
	return out, err
}

func (o offlineDead) get(_ context.Context, id string) (agent.DeadBatch, error) {
	d, err := o.o.DeadLetters().Get(id)
	if errors.Is(err, errs.ErrNotFound) {
		return agent.DeadBatch{}, fmt.Errorf("%w; see 'outbox dead list' for the IDs", err)
	}
	return agent.NewDeadBatch(d), err
}

func (o offlineDead) replay(ctx context.Context, ids []string) (int, error) {
	return o.o.DeadLetters().Replay(ctx, ids...)
}

func (o offlineDead) replayMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error) {
	return o.o.DeadLetters().ReplayMatching(ctx, f)
}

func (o offlineDead) purge(ctx context.Context, ids []string) (int, error) {
	return o.o.DeadLetters().Purge(ctx, ids...)
}

func (o offlineDead) purgeMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error) {
	return o.o.DeadLetters().PurgeMatching(ctx, f)
}
