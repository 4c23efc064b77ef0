package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// targetEncrypted is the least share of the same run's figure without encryption that agent
// ingest and the drain keep with queue.encryption.key_files set.
const targetEncrypted = 0.90

// runEncrypt runs the agent section again with encryption at rest on (one key file written
// by keyring.Generate, as outbox keygen does): ingest into an empty data directory, then the
// restart and drain of the N events it queued, every record sealed with AES-256-GCM. Its rows
// compare each figure with the agent section's of the same run.
func (b *bench) runEncrypt(ctx context.Context) {
	if _, err := os.Stat(b.opt.bin); err != nil {
		b.fail("hold-encrypted", fmt.Errorf("%s: %w (run `make build` or pass -outbox)", b.opt.bin, err))
		return
	}
	key := filepath.Join(b.root, "queue.key")
	if _, err := keyring.Generate(key); err != nil {
		b.fail("hold-encrypted", err)
		return
	}
	b.extraEnv = []string{"OUTBOX_QUEUE_ENCRYPTION_KEY_FILES=" + key}
	defer func() { b.extraEnv = nil }()
	d := b.dir("agent-encrypted")
	defer b.drop(d)
	b.progress("agent, encryption on: ingest %s events over POST /v1/batch, collector paused; then restart and drain them",
		thousands(int64(b.opt.events)))
	h, err := b.agentHold(ctx, d, b.opt.hold)
	if err != nil {
		b.fail("hold-encrypted", err)
		return
	}
	b.holdEnc = &h
	r, err := b.agentRestartDrain(ctx, d, b.opt.events)
	if err != nil {
		b.fail("restart-encrypted", err)
		return
	}
	b.restartEnc = &r
}

// encryptRows are the agent ingest and drain rows with encryption at rest on, each against the
// same run's figure without.
func (b *bench) encryptRows() []row {
	var rs []row
	name := fmt.Sprintf("agent ingest, POST /v1/batch %d×%d, encryption on", b.opt.clients, b.opt.perRequest)
	if h := b.holdEnc; h != nil {
		var plain float64
		if b.hold != nil {
			plain = b.hold.ingest.rate()
		}
		ref, ratio := ratioTo(h.ingest.rate(), plain)
		rs = append(rs, row{
			name: name, result: rate(h.ingest.rate()), ref: ref, ratio: ratio,
			target: "≥ 90% of without", verdict: verdictIf(plain > 0, h.ingest.rate() >= targetEncrypted*plain),
			detail: fmt.Sprintf("agent ingest, encryption on: as the agent ingest row, with queue.encryption.key_files set to one key: "+
				"every event sealed with AES-256-GCM before it is stored; reference: that row, same run. %s",
				h.cpu.perEvent(h.ingest.events, h.ingest.elapsed, "agent", "load generator (the bench process)")),
		})
	} else {
		rs = append(rs, b.errRow(name, "hold-encrypted"))
	}
	name = fmt.Sprintf("drain %s queued, gzip (agent), encryption on", short(b.opt.events))
	if r := b.restartEnc; r != nil {
		v := float64(r.unique) / r.drain.Seconds()
		var plain float64
		if p := b.restart; p != nil {
			plain = float64(p.unique) / p.drain.Seconds()
		}
		ref, ratio := ratioTo(v, plain)
		rs = append(rs, row{name: name, result: rate(v), ref: ref, ratio: ratio,
			target: "≥ 90% of without", verdict: verdictIf(plain > 0, v >= targetEncrypted*plain),
			detail: fmt.Sprintf("drain, encryption on: as the drain row, every record opened (AES-256-GCM) as it is leased; "+
				"%s distinct messageIds in %s (%d duplicates); reference: the drain row, same run.",
				thousands(r.unique), secs(r.drain), r.dups)})
	} else {
		rs = append(rs, b.errRow(name, "restart-encrypted"))
	}
	return rs
}
