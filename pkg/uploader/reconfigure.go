package uploader

import (
	"fmt"
	"maps"

	"github.com/outboxhq/outbox/pkg/errs"
)

// Reconfigure changes the settings of a running client that can change without a new Open:
// Batch (batch.*), Retry (retry.*), Privacy (privacy.*: the rules, the hash key and the
// suppress list, read again), of Upload the WriteKey, Headers, Timeout, OnAuthFailure,
// Concurrency and SplitRejected, and of Sources the Named sources (sources.<name>.*). The
// other fields of cfg are not read: the data directory, the queue, the limits, the endpoint,
// the transport and relay mode (Sources.Relay, RelayEndpoint, Max) stay as Open set them up.
//
// A source new in Sources.Named takes events at once; a changed one's next attempts use its
// new write key, endpoint and headers, and its new MaxBytes applies to the next enqueues. A
// source no longer named is removed without dropping anything: Client.Source no longer hands
// it out, and it drains the events it holds (and those of enqueues begun before the call)
// with its last settings, shown in Stats as Removed, then is forgotten. Naming it again
// before that makes it a configured source again, its queued events going with the new
// settings. A change of a source's credentials probes a pause on refused credentials at once.
//
// cfg is validated as Open validates it (after filling zero values with defaults); an invalid
// one changes nothing and its error is returned. Nothing in flight is cut short or dropped:
// an attempt in flight finishes with the settings it started with, and every attempt and
// lease after the call uses the new ones. A batch's retry budget is set when it is leased, so
// new retry.* values apply from the next batch on. A new upload.concurrency applies to the
// next attempts; moving between 1 (one batch at a time, FIFO) and more waits for the batches
// in flight to finish. It returns errs.ErrClosed after Close.
func (c *Client) Reconfigure(cfg Config) error {
	cfg = cfg.withDefaults()
	cfg.Limits = c.cfg.Limits // not live; the lease bound is measured against them
	// Relay mode is not live: the relay sources and their registry are set up at Open.
	cfg.Sources.Relay, cfg.Sources.RelayEndpoint, cfg.Sources.Max = c.sources.cfg.Relay, c.sources.cfg.RelayEndpoint, c.sources.cfg.Max
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errs.ErrClosed
	}
	c.reconf.Lock()
	defer c.reconf.Unlock()
	if err := c.reconfigurePrivacy(cfg.Privacy); err != nil {
		return err
	}
	if c.creds != nil {
		c.creds.SetCredentials(cfg.Upload.WriteKey, cfg.Upload.Headers)
	}
	s := newSettings(cfg)
	c.w.live.Store(s)
	c.w.gate.setFixed(s.fixed)
	c.w.signal() // a wait for batch.interval is measured again with the new settings
	c.log.Info("upload settings reconfigured", "batch_max_events", s.batch.MaxEvents, "batch_max_bytes", s.batch.MaxBytes,
		"batch_interval", s.batch.Interval.String(), "upload_timeout", s.timeout.String(), "concurrency", concurrencyName(s.fixed))
	sc := c.reconfigureSources(cfg.Sources.Named)
	if c.credentials != cfg.Upload.WriteKey || !maps.Equal(c.headers, cfg.Upload.Headers) || len(sc.credentials) > 0 {
		c.credentials, c.headers = cfg.Upload.WriteKey, maps.Clone(cfg.Upload.Headers)
		c.credentialsChanged()
	}
	return nil
}

// reconfigurePrivacy loads a new privacy section (rules, hash key, suppress list) and swaps it
// in for the events that arrive from then on; on error nothing changes.
func (c *Client) reconfigurePrivacy(pc PrivacyConfig) error {
	c.privMu.Lock()
	defer c.privMu.Unlock()
	p, err := pc.load()
	if err != nil {
		return err
	}
	c.priv.Store(p)
	return nil
}

// credentialsChanged runs after a Reconfigure that changed upload.write_key or upload.headers,
// or a source's write key, endpoint or headers: a pause on refused credentials probes at once
// rather than at the next probe period.
func (c *Client) credentialsChanged() {
	c.w.signal()
	c.probeAuthNow()
}

// concurrencyName is upload.concurrency as configured: auto or the number.
func concurrencyName(fixed int) string {
	if fixed == 0 {
		return DefaultConcurrency
	}
	return fmt.Sprint(fixed)
}
