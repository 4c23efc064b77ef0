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

// encryptRounds is how many times the encrypt section runs the agent's ingest and drain
// without encryption and then with it. One such run moves by ±10 % from the next on two shared
// cores, and the agent section's own run is minutes away from this one: each row compares the
// medians of runs taken in turns.
const encryptRounds = 3

// encryptRun is one agent ingest (collector paused) and the restart and drain of what it queued.
type encryptRun struct {
	hold    holdResult
	restart restartResult
}

func (r encryptRun) ingestRate() float64 { return r.hold.ingest.rate() }

func (r encryptRun) drainRate() float64 { return r.restart.rate() }

// encryptResults are the encrypt section's runs, plain and sealed, in the order run.
type encryptResults struct{ plain, sealed []encryptRun }

// runEncrypt runs the agent section encryptRounds times without encryption at rest and with it
// (one key file written by keyring.Generate, as outbox keygen does), in turns: ingest into an
// empty data directory, then the restart and drain of the N events it queued, every record
// sealed with AES-256-GCM in the sealed runs. Its rows compare the medians.
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
	defer func() { b.extraEnv = nil }()
	res := &encryptResults{}
	for round := range encryptRounds {
		for _, sealed := range []bool{false, true} {
			name := "without encryption"
			b.extraEnv = nil
			if sealed {
				b.extraEnv, name = []string{"OUTBOX_QUEUE_ENCRYPTION_KEY_FILES=" + key}, "encryption on"
			}
			b.progress("agent, %s (round %d of %d): ingest %s events over POST /v1/batch, collector paused; then restart and drain them",
				name, round+1, encryptRounds, thousands(int64(b.opt.events)))
			r, err := b.encryptRun(ctx)
			if err != nil {
				b.fail("hold-encrypted", err)
				return
			}
			if sealed {
				res.sealed = append(res.sealed, r)
			} else {
				res.plain = append(res.plain, r)
			}
		}
	}
	b.encrypt = res
}

// encryptRun is one ingest and drain of the agent on a data directory of its own.
func (b *bench) encryptRun(ctx context.Context) (encryptRun, error) {
	d := b.dir("agent-encrypt")
	defer b.drop(d)
	h, err := b.agentHold(ctx, d, b.opt.hold)
	if err != nil {
		return encryptRun{}, err
	}
	r, err := b.agentRestartDrain(ctx, d, b.opt.events)
	if err != nil {
		return encryptRun{}, fmt.Errorf("restart and drain: %w", err)
	}
	return encryptRun{hold: h, restart: r}, nil
}

// encryptRows are the agent ingest and drain rows with encryption at rest on, each against the
// same section's runs without.
func (b *bench) encryptRows() []row {
	ingestName := fmt.Sprintf("agent ingest, POST /v1/batch %d×%d, encryption on", b.opt.clients, b.opt.perRequest)
	drainName := fmt.Sprintf("drain %s queued, gzip (agent), encryption on", short(b.opt.events))
	e := b.encrypt
	if e == nil || len(e.sealed) == 0 || len(e.plain) == 0 {
		return []row{b.errRow(ingestName, "hold-encrypted"), b.errRow(drainName, "hold-encrypted")}
	}
	rounds := fmt.Sprintf("the medians of %d rounds, each an agent without encryption and then one with it", len(e.sealed))
	var rs []row
	sealed, plain := medianBy(e.sealed, encryptRun.ingestRate), medianBy(e.plain, encryptRun.ingestRate)
	v, ref := sealed.ingestRate(), plain.ingestRate()
	refText, ratio := ratioTo(v, ref)
	rs = append(rs, row{
		name: ingestName, result: rate(v), ref: refText, ratio: ratio,
		target: "≥ 90% of without", verdict: verdictIf(ref > 0, v >= targetEncrypted*ref),
		detail: fmt.Sprintf("agent ingest, encryption on: as the agent ingest row, with queue.encryption.key_files set to one key: "+
			"every event sealed with AES-256-GCM before it is stored; %s (in the order run, without: %s; with: %s). "+
			"The median run with encryption: %s", rounds, eachRate(e.plain, encryptRun.ingestRate), eachRate(e.sealed, encryptRun.ingestRate),
			sealed.hold.cpu.perEvent(sealed.hold.ingest.events, sealed.hold.ingest.elapsed, "agent", "load generator (the bench process)")),
	})
	sealed, plain = medianBy(e.sealed, encryptRun.drainRate), medianBy(e.plain, encryptRun.drainRate)
	v, ref = sealed.drainRate(), plain.drainRate()
	refText, ratio = ratioTo(v, ref)
	rs = append(rs, row{name: drainName, result: rate(v), ref: refText, ratio: ratio,
		target: "≥ 90% of without", verdict: verdictIf(ref > 0, v >= targetEncrypted*ref),
		detail: fmt.Sprintf("drain, encryption on: as the drain row, every record opened (AES-256-GCM) as it is leased; "+
			"%s (in the order run, without: %s; with: %s). The median run with encryption: %s distinct messageIds in %s (%d duplicates).",
			rounds, eachRate(e.plain, encryptRun.drainRate), eachRate(e.sealed, encryptRun.drainRate),
			thousands(sealed.restart.unique), secs(sealed.restart.drain), sealed.restart.dups)})
	return rs
}
