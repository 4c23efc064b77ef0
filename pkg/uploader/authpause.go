package uploader

import (
	"errors"
	"fmt"
	"time"
)

// authProbeInterval is how often the head batch is tried while the destination refuses our
// credentials: delivery resumes within a minute of a fix the agent was not told about, and a
// refused key costs the collector one request a minute.
const authProbeInterval = time.Minute

// authState is the gate's pause on refused credentials (guarded by gate.mu). A 401 or 403
// says our credentials are wrong, not the events: dead-lettering would move the whole stream
// into dead letters until the key is fixed. So no new attempt of any batch starts (intake goes
// on up to the quota), the head lease alone probes once per authProbeInterval (at once after
// probeNow), spending no budget, and the first success resumes everything.
type authState struct {
	on      bool
	since   time.Time // the refusal that began the pause
	code    string    // the last refusal ("401", "403", a Kafka error name)
	key     string    // the configuration key to fix
	probeAt time.Time // the head batch's next attempt
	warned  time.Time // the last warn line
}

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

// refuse records a refusal of our credentials: it begins the pause (or goes on with it) and
// sets the next probe. warn reports whether to log it: at the start of the pause, then at most
// once per probe period, however many batches in flight were refused together.
func (g *gate) refuse(code, key string) (began, warn bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	began = !g.auth.on
	if began {
		g.auth = authState{on: true, since: now}
	}
	g.auth.code, g.auth.key = code, key
	g.auth.probeAt = now.Add(authProbeInterval)
	warn = began || now.Sub(g.auth.warned) >= authProbeInterval
	if warn {
		g.auth.warned = now
	}
	g.notifyLocked()
	return began, warn
}

// resumeAuth ends the pause after a success: every batch may go again. It returns when the
// pause had begun, false when there was none.
func (g *gate) resumeAuth() (since time.Time, was bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.auth.on {
		return time.Time{}, false
	}
	since = g.auth.since
	g.auth = authState{}
	g.notifyLocked()
	return since, true
}

// probeNow moves the next probe to now; false when delivery is not paused.
func (g *gate) probeNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.auth.on {
		return false
	}
	g.auth.probeAt = g.clock.Now()
	g.notifyLocked()
	return true
}

// authStats returns the pause as Stats shows it.
func (g *gate) authStats() AuthPauseStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.auth.on {
		return AuthPauseStats{}
	}
	return AuthPauseStats{Paused: true, Since: g.auth.since, Code: g.auth.code, Key: g.auth.key, NextProbe: g.auth.probeAt}
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
func (w *worker) authKey(o Outcome) string {
	if ce := (*ConfigError)(nil); errors.As(o.Err, &ce) && ce.Key != "" {
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
