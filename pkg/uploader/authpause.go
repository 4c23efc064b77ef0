package uploader

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
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

// refuse records a refusal of source's credentials in its hold (hold.refuse).
func (g *gate) refuse(source, code, key string) (began, warn bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	began, warn = g.sourceLocked(source).hold.refuse(g.clock.Now(), code, key)
	g.notifyLocked()
	return began, warn
}

// resumeAuth ends source's hold on refused credentials after a success: every batch of it
// may go again. It returns when the hold had begun, false when there was none.
func (g *gate) resumeAuth(source string) (since time.Time, was bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	since, was = g.sourceLocked(source).hold.resume()
	if was {
		g.notifyLocked()
	}
	return since, was
}

// probeNow moves the next probe of every source held on refused credentials to now; false
// when none is.
func (g *gate) probeNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, any := g.clock.Now(), false
	for _, sg := range g.sources {
		if sg.hold.probeNow(now) {
			any = true
		}
	}
	if any {
		g.notifyLocked()
	}
	return any
}

// authStats returns source's hold on refused credentials as Stats shows it.
func (g *gate) authStats(source string) AuthPauseStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	sg := g.sources[source]
	if sg == nil || !sg.hold.auth.on {
		return AuthPauseStats{}
	}
	a := sg.hold.auth
	return AuthPauseStats{Paused: true, Since: a.since, Code: a.code, Key: a.key, NextProbe: a.probeAt}
}

// authHeld returns the sources held on refused credentials, by name.
func (g *gate) authHeld() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, sg := range g.sources {
		if sg.hold.auth.on {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// authPause returns the pause on refused credentials as Stats and Flush show it: the default
// source's when it is paused, else the first paused source's by name (each source's own is
// in Stats().Sources).
func (c *Client) authPause() AuthPauseStats {
	held := c.w.gate.authHeld()
	if len(held) == 0 {
		return AuthPauseStats{}
	}
	source := held[0]
	if slices.Contains(held, DefaultSource) {
		source = DefaultSource
	}
	a := c.w.gate.authStats(source)
	if a.Paused {
		a.Message = c.w.authMessage(source, a.Code, a.Key)
	}
	return a
}

// probeAuthNow makes every source paused on refused credentials try its head batch at once
// instead of at the next probe: the credentials were just changed (a reload of
// upload.write_key, upload.headers or a source's keys). It does nothing when none is paused.
func (c *Client) probeAuthNow() {
	if c.w.gate.probeNow() {
		c.log.Info("credentials changed; probing the destination now")
	}
}

// refused routes an attempt whose credentials the destination refused, under
// upload.on_auth_failure: pause. The batch stays queued with its budget untouched (no retry
// counted, no X-Retry-Count); the gate holds it, as the head's probe or behind it.
func (w *worker) refused(t *tried) next {
	source := sourceOf(t.b)
	code, key := resultCode(t.o), w.authKey(source, t.o)
	began, warn := w.gate.refuse(source, code, key)
	w.board.count(func(c *Counters) { c.AuthRefusals++ })
	if warn {
		// describe is what the destination said (a status and a body snippet, a SASL error):
		// never our credential, which no answer carries.
		w.log.Warn(w.authMessage(source, code, key)+"; delivery of the source is paused, the queue kept", "source", source, "began", began,
			"probe_every", authProbeInterval.String(), "answer", describe(t.o))
	}
	return next{kind: nextRefused, err: asError(t.o)}
}

// resumed ends source's pause on refused credentials after a success, and says so.
func (w *worker) resumed(source string) {
	if since, was := w.gate.resumeAuth(source); was {
		w.log.Info("the destination accepts our credentials again; delivery resumes", "source", source,
			"paused_for", w.clock.Now().Sub(since).Round(time.Second).String())
	}
}

// authKey is the configuration key behind source's refused credentials: a destination's own
// (a *ConfigError's Key, as pkg/kafka sets it), else for the default source upload.write_key,
// or upload.headers when only they carry a credential, and for another source its own key
// (sources.go: credentialKey).
func (w *worker) authKey(source string, o delivery.Outcome) string {
	if ce := (*delivery.ConfigError)(nil); errors.As(o.Err, &ce) && ce.Key != "" {
		return ce.Key
	}
	if source == DefaultSource || w.sources == nil {
		return w.settings().authKey
	}
	return w.sources.credentialKey(source)
}

// authMessage says who refuses what of source and what to do (never the credential itself).
func (w *worker) authMessage(source, code, key string) string {
	who := "the collector"
	if name := w.dest.Name(); name != "http" {
		who = "the " + name + " destination"
	}
	if source != DefaultSource {
		fix := "fix " + key + " and reload"
		if !strings.HasPrefix(key, "sources.") && !strings.HasPrefix(key, "upload.") {
			fix = "fix " + key // a relay source's key is the apps' own: no reload of ours changes it
		}
		return fmt.Sprintf("%s refuses the credentials of source %s (%s): %s", who, source, code, fix)
	}
	return fmt.Sprintf("%s refuses our credentials (%s): fix %s and reload", who, code, key)
}
