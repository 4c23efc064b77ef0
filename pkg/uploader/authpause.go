package uploader

import (
	"errors"
	"fmt"
	"github.com/outboxhq/outbox/pkg/delivery"
	"time"
)

// AuthPauseStats describes a pause of delivery on refused credentials (upload.on_auth_failure:
// pause). The zero value is "not paused".
type AuthPauseStats struct {
	Paused    bool
	Since     time.Time // when the pause began
	Code      string    // the last refusal: "401", "403", or a Kafka error name
	Key       string    // the configuration key to fix: "upload.write_key", "upload.headers", "upload.kafka.sasl"
	NextProbe time.Time // when the head batch is tried again
	Message   string    // who refuses, and what to fix, as the warn log says it (never the credential)
}

// refuse records a refusal of our credentials in the gate's hold (hold.refuse).
func (g *gate) refuse(code, key string) (began, warn bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	began, warn = g.hold.refuse(g.clock.Now(), code, key)
	g.notifyLocked()
	return began, warn
}

// resumeAuth ends the hold on refused credentials after a success: every batch may go again.
// It returns when the hold had begun, false when there was none.
func (g *gate) resumeAuth() (since time.Time, was bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	since, was = g.hold.resume()
	if was {
		g.notifyLocked()
	}
	return since, was
}

// probeNow moves the next probe of refused credentials to now; false when delivery is not
// held on them.
func (g *gate) probeNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.hold.probeNow(g.clock.Now()) {
		return false
	}
	g.notifyLocked()
	return true
}

// authStats returns the hold on refused credentials as Stats shows it.
func (g *gate) authStats() AuthPauseStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.hold.auth
	if !a.on {
		return AuthPauseStats{}
	}
	return AuthPauseStats{Paused: true, Since: a.since, Code: a.code, Key: a.key, NextProbe: a.probeAt}
}

// authPause returns the pause as Stats and Flush show it, with its message.
func (c *Client) authPause() AuthPauseStats {
	a := c.w.gate.authStats()
	if a.Paused {
		a.Message = c.w.authMessage(a.Code, a.Key)
	}
	return a
}

// probeAuthNow makes a paused uploader try the head batch at once instead of at the next
// probe: the credentials were just changed (a reload of upload.write_key or upload.headers).
// It does nothing when delivery is not paused.
func (c *Client) probeAuthNow() {
	if c.w.gate.probeNow() {
		c.log.Info("credentials changed; probing the destination now")
	}
}

// refused routes an attempt whose credentials the destination refused, under
// upload.on_auth_failure: pause. The batch stays queued with its budget untouched (no retry
// counted, no X-Retry-Count); the gate holds it, as the head's probe or behind it.
func (w *worker) refused(t *tried) next {
	code, key := resultCode(t.o), w.authKey(t.o)
	began, warn := w.gate.refuse(code, key)
	w.board.count(func(c *Counters) { c.AuthRefusals++ })
	if warn {
		// describe is what the destination said (a status and a body snippet, a SASL error):
		// never our credential, which no answer carries.
		w.log.Warn(w.authMessage(code, key)+"; delivery is paused, the queue kept", "began", began,
			"probe_every", authProbeInterval.String(), "answer", describe(t.o))
	}
	return next{kind: nextRefused, err: asError(t.o)}
}

// resumed ends a pause on refused credentials after a success, and says so.
func (w *worker) resumed() {
	if since, was := w.gate.resumeAuth(); was {
		w.log.Info("the destination accepts our credentials again; delivery resumes",
			"paused_for", w.clock.Now().Sub(since).Round(time.Second).String())
	}
}

// authKey is the configuration key behind refused credentials: a destination's own (a
// *ConfigError's Key, as pkg/kafka sets it), else upload.write_key, or upload.headers when
// only they carry a credential.
func (w *worker) authKey(o delivery.Outcome) string {
	if ce := (*delivery.ConfigError)(nil); errors.As(o.Err, &ce) && ce.Key != "" {
		return ce.Key
	}
	return w.settings().authKey
}

// authMessage says who refuses what and what to do (never the credential itself).
func (w *worker) authMessage(code, key string) string {
	who := "the collector"
	if name := w.dest.Name(); name != "http" {
		who = "the " + name + " destination"
	}
	return fmt.Sprintf("%s refuses our credentials (%s): fix %s and reload", who, code, key)
}
