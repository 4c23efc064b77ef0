package uploader

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/queue"
)

// This file forgets users: their queued and dead-lettered events are deleted, and the batches
// in flight hold none of them once Forget returns. The worker's part is one hook around each
// send (attempt.go): while a forget runs no send starts, the sends in progress are waited for,
// and a batch read before a forget is sent without the events it removed.

// ErrNoSuppressFile is returned by Forget with Suppress, and by Unsuppress, when
// privacy.suppress_file is not set: there is no list to edit.
var ErrNoSuppressFile = errors.New("privacy.suppress_file is not set: set it to a file outbox may write (one id per line) to suppress users")

// ForgetRequest names the users to forget: the events whose userId is one of UserIDs or
// whose anonymousId is one of AnonymousIDs (a numeric userId is matched by its JSON text,
// "42").
type ForgetRequest struct {
	UserIDs      []string
	AnonymousIDs []string
	// Suppress also adds every id to the suppress list (privacy.suppress_file), before the
	// events are deleted, so that none of that user's events is queued from then on.
	Suppress bool
}

// validate checks that the request names someone, and no id is empty.
func (r ForgetRequest) validate() error {
	if len(r.UserIDs)+len(r.AnonymousIDs) == 0 {
		return errors.New("forget: name at least one user id or anonymous id")
	}
	for _, id := range append(append([]string(nil), r.UserIDs...), r.AnonymousIDs...) {
		if strings.TrimSpace(id) == "" {
			return errors.New("forget: an id is empty; pass each id as it appears in the events' userId or anonymousId")
		}
	}
	return nil
}

// ids returns every id of the request, user ids first.
func (r ForgetRequest) ids() []string {
	return append(append([]string(nil), r.UserIDs...), r.AnonymousIDs...)
}

// matcher is the request as an event matcher.
func (r ForgetRequest) matcher() event.UserMatcher {
	return event.UserMatcher{Users: event.NewIDSet(r.UserIDs...), Anonymous: event.NewIDSet(r.AnonymousIDs...)}
}

// ForgetResult is what Forget removed, per source of events.
type ForgetResult struct {
	Sources []SourceForgotten // one per source, in name order: DefaultSource for a client
}

// forgetResult is the queue's answer as rows: one per source that lost an event, in name
// order; one row of DefaultSource when nothing matched.
func forgetResult(res queue.ForgetResult) ForgetResult {
	if len(res.Sources) == 0 {
		return ForgetResult{Sources: []SourceForgotten{{Source: DefaultSource}}}
	}
	var out ForgetResult
	for _, name := range slices.Sorted(maps.Keys(res.Sources)) {
		r := res.Sources[name]
		out.Sources = append(out.Sources, SourceForgotten{Source: name, Queued: r.Queued, Dead: r.Dead, DeadBatches: r.DeadBatches})
	}
	return out
}

// SourceForgotten is what Forget removed from one source's events.
type SourceForgotten struct {
	Source      string
	Queued      int // events deleted from the queue (those in flight included)
	Dead        int // events deleted from dead batches
	DeadBatches int // dead batches deleted because every event in them was
}

// Forget deletes every queued and dead-lettered event of the users req names, in one
// transaction, and makes sure that none of them is sent once it returns: it stops new sends,
// waits for those in progress (each bounded by upload.timeout), deletes, and lets sending go
// on, each batch read before the deletion being sent without the events it removed. With
// req.Suppress the ids are first added to the suppress list. It logs one audit line at info
// that names no user: a keyed hash of each id (the hex HMAC-SHA256 of the id under the hash
// key of privacy.hash_key_file, else under the data directory's random salt; its first 16
// bytes) and the counts. The batches of the users still being sent when Forget was called
// may have reached the collector: Forget does not cut a request short.
//
// A forget reads every stored event inside its transaction; the forgotten users are kept in
// memory until Close, to strip their events from batches read before. It returns
// errs.ErrClosed after Close, and ctx's error when ctx ends while sends are waited for
// (nothing is deleted then).
func (c *Client) Forget(ctx context.Context, req ForgetRequest) (ForgetResult, error) {
	if err := req.validate(); err != nil {
		return ForgetResult{}, err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ForgetResult{}, errs.ErrClosed
	}
	c.privMu.Lock() // one forget at a time, and no reload of the list in between
	defer c.privMu.Unlock()
	if req.Suppress {
		if err := c.suppressIDs(req.ids()); err != nil {
			return ForgetResult{}, err
		}
	}
	g := &c.w.forgets
	if err := g.hold(ctx); err != nil {
		return ForgetResult{}, fmt.Errorf("forget: waiting for the batches being sent: %w", err)
	}
	match := req.matcher().Match
	res, err := c.q.Forget(ctx, match)
	g.release(forgotten{upto: c.q.LastKey(), match: match}, err == nil)
	if err != nil {
		return ForgetResult{}, err
	}
	out := forgetResult(res)
	c.w.signal() // the head may have moved
	auditForget(ctx, c.log, c.q, c.priv.Load().hashKey, req, out)
	return out, nil
}

// Forget deletes every queued and dead-lettered event of the users req names, in one
// transaction, from the data directory of a stopped agent or application; with req.Suppress
// it first adds the ids to privacy.suppress_file. It logs the audit line Client.Forget logs
// to log (nil: none).
func (o *Offline) Forget(ctx context.Context, req ForgetRequest, log *slog.Logger) (ForgetResult, error) {
	if err := req.validate(); err != nil {
		return ForgetResult{}, err
	}
	p, err := o.cfg.Privacy.load()
	if err != nil {
		return ForgetResult{}, err
	}
	if req.Suppress {
		if p.cfg.SuppressFile == "" {
			return ForgetResult{}, ErrNoSuppressFile
		}
		if _, err := EditSuppressList(p.cfg.SuppressFile, req.ids(), false); err != nil {
			return ForgetResult{}, err
		}
	}
	res, err := o.q.Forget(ctx, req.matcher().Match)
	if err != nil {
		return ForgetResult{}, err
	}
	out := forgetResult(res)
	if log != nil {
		auditForget(ctx, log, o.q, p.hashKey, req, out)
	}
	return out, nil
}

// auditForget logs the audit line of a forget: keyed hashes of the ids, never the ids.
func auditForget(ctx context.Context, log *slog.Logger, q *queue.Queue, hashKey []byte, req ForgetRequest, res ForgetResult) {
	key, keyName := hashKey, "privacy.hash_key_file"
	if key == nil {
		salt, err := q.Salt(ctx)
		if err != nil {
			log.Error("users forgotten; the audit line has no id hashes: the data directory's salt cannot be read", "error", err)
			return
		}
		key, keyName = salt, "data_dir_salt"
	}
	hashes := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			m := hmac.New(sha256.New, key)
			m.Write([]byte(id))
			out[i] = hex.EncodeToString(m.Sum(nil)[:16])
		}
		return out
	}
	attrs := []any{"user_id_hashes", hashes(req.UserIDs), "anonymous_id_hashes", hashes(req.AnonymousIDs),
		"hash_key", keyName, "suppress", req.Suppress}
	for _, s := range res.Sources {
		attrs = append(attrs, slog.Group("source_"+s.Source, "queued", s.Queued, "dead", s.Dead, "dead_batches", s.DeadBatches))
	}
	log.Info("users forgotten", attrs...)
}

// forgetGate is the worker's side of Forget: it holds sends while a forget runs and strips
// the forgotten events from batches read before it. The zero value is ready.
type forgetGate struct {
	mu        sync.Mutex    // guards the fields below
	sending   int           // sends in progress
	idle      chan struct{} // closed when sending falls to 0 while a forget waits for it
	held      chan struct{} // non-nil while a forget runs; closed when it ends
	forgotten []forgotten   // every forget since Open, oldest first
	upto      []byte        // the greatest upto of forgotten
}

// forgotten is one forget: the events it matched, and the last key stored when it ran (a
// batch whose first key is greater was read after it, and holds none of its events).
type forgotten struct {
	upto  []byte
	match func(event []byte) bool
}

// beginSend is called before each send of b: it waits while a forget runs (false when ctx
// ends first), then counts the send as in progress (endSend ends it) and returns the events
// to send: b's, without those of the users forgotten since b was read. When it strips any,
// pre (a payload built ahead from all of b's events) is released and set to nil. When none is
// left, it returns no events and counts nothing: b has left the queue.
func (g *forgetGate) beginSend(ctx context.Context, b *queue.Lease, pre *any, release func(any)) ([][]byte, bool) {
	events := b.Events
	for {
		g.mu.Lock()
		for g.held != nil {
			held := g.held
			g.mu.Unlock()
			select {
			case <-held:
			case <-ctx.Done():
				return nil, false
			}
			g.mu.Lock()
		}
		if g.upto == nil || len(b.Keys()) == 0 || bytes.Compare(b.Keys()[0], g.upto) > 0 {
			g.sending++
			g.mu.Unlock()
			return events, true
		}
		list := g.forgotten // append-only: the entries seen now stay as they are
		g.mu.Unlock()
		events = strip(b, list)
		g.mu.Lock()
		if g.held == nil && len(g.forgotten) == len(list) {
			if len(events) > 0 {
				g.sending++
			}
			g.mu.Unlock()
			break
		}
		g.mu.Unlock() // a forget began meanwhile: wait for it, then strip again
	}
	if len(events) < len(b.Events) && *pre != nil {
		release(*pre)
		*pre = nil
	}
	if len(events) == 0 {
		return nil, true
	}
	return events, true
}

// strip returns b's events without those of the forgets in list that were stored before the
// forget ran (an event stored after it is a new event of that user, which it did not delete).
func strip(b *queue.Lease, list []forgotten) [][]byte {
	keys, events := b.Keys(), b.Events
	for _, f := range list {
		if bytes.Compare(keys[0], f.upto) > 0 {
			continue
		}
		keptKeys := make([][]byte, 0, len(keys))
		kept := make([][]byte, 0, len(events))
		for i, e := range events {
			if bytes.Compare(keys[i], f.upto) > 0 || !f.match(e) {
				keptKeys, kept = append(keptKeys, keys[i]), append(kept, e)
			}
		}
		keys, events = keptKeys, kept
	}
	return events
}

// endSend marks a send begun by beginSend as over.
func (g *forgetGate) endSend() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sending--
	if g.sending == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// hold stops new sends and waits for those in progress; release ends it. On ctx's end it
// lets sends go on again and returns ctx's error.
func (g *forgetGate) hold(ctx context.Context) error {
	g.mu.Lock()
	g.held = make(chan struct{})
	var idle chan struct{}
	if g.sending > 0 {
		g.idle = make(chan struct{})
		idle = g.idle
	}
	g.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		g.release(forgotten{}, false)
		return ctx.Err()
	}
}

// release lets sends go on after hold; with done, f is remembered for the batches read before
// it.
func (g *forgetGate) release(f forgotten, done bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if done && f.upto != nil {
		g.forgotten = append(g.forgotten, f)
		if g.upto == nil || bytes.Compare(f.upto, g.upto) > 0 {
			g.upto = f.upto
		}
	}
	g.idle = nil
	close(g.held)
	g.held = nil
}
