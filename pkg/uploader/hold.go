package uploader

import "time"

// authProbeInterval is how often the head batch is tried while the destination refuses our
// credentials: delivery resumes within a minute of a fix the agent was not told about, and a
// refused key costs the collector one request a minute.
const authProbeInterval = time.Minute

// hold is a deadline before which no new attempt starts, and its reason: a usable Retry-After
// (a statement about this client, so it holds every batch until the latest such deadline), or
// refused credentials (a 401, a 403, a Kafka SASL or ACL refusal: our configuration, not the
// events), which hold every batch but the head until a success, the head probing once per
// authProbeInterval. A hold is a plain value, not safe for concurrent use: the gate owns one
// under its lock, and a source of its own can own another.
type hold struct {
	until time.Time // no attempt starts before it (Retry-After)
	auth  authHold
}

// authHold is a hold on refused credentials.
type authHold struct {
	on      bool
	since   time.Time // the refusal that began it
	code    string    // the last refusal ("401", "403", a Kafka error name)
	key     string    // the configuration key to fix
	probeAt time.Time // the head batch's next attempt
	warned  time.Time // the last warn line
}

// retryAfter holds every attempt until t; the latest deadline wins. It reports whether the
// hold changed.
func (h *hold) retryAfter(t time.Time) bool {
	if !t.After(h.until) {
		return false
	}
	h.until = t
	return true
}

// refuse records a refusal of our credentials at now: it begins the hold (or goes on with it)
// and sets the next probe. warn reports whether to log it: at the start of the hold, then at
// most once per probe period, however many batches in flight were refused together.
func (h *hold) refuse(now time.Time, code, key string) (began, warn bool) {
	began = !h.auth.on
	if began {
		h.auth = authHold{on: true, since: now}
	}
	h.auth.code, h.auth.key = code, key
	h.auth.probeAt = now.Add(authProbeInterval)
	warn = began || now.Sub(h.auth.warned) >= authProbeInterval
	if warn {
		h.auth.warned = now
	}
	return began, warn
}

// resume ends a hold on refused credentials after a success. It returns when the hold began,
// and false when there was none.
func (h *hold) resume() (since time.Time, was bool) {
	if !h.auth.on {
		return time.Time{}, false
	}
	since = h.auth.since
	h.auth = authHold{}
	return since, true
}

// probeNow moves the next probe of refused credentials to now; false when there is no such
// hold.
func (h *hold) probeNow(now time.Time) bool {
	if !h.auth.on {
		return false
	}
	h.auth.probeAt = now
	return true
}

// check says what the hold means for an attempt at now: wait this long first (path says why:
// PathRateLimit or PathAuth), or, when ok is false, do not start at all until the hold
// changes. head says the attempt is of the oldest batch in flight: while our credentials are
// refused only the head probes.
func (h *hold) check(now time.Time, head bool) (wait time.Duration, path string, ok bool) {
	wait, path = max(h.until.Sub(now), 0), PathRateLimit
	if !h.auth.on {
		return wait, path, true
	}
	if !head {
		return 0, PathAuth, false
	}
	return max(wait, h.auth.probeAt.Sub(now)), PathAuth, true
}
