package httpdest

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
)

// Destination is the HTTP destination: a POST of the Segment batch body to a collector
// (Config.Endpoint), with the headers, the request hook, the redirect policy and the
// classifier of this package. It builds a batch's body ahead of its first attempt when the
// worker asks (Prepare), beside the request in flight. Send is safe for concurrent use.
type Destination struct {
	hc       *http.Client
	rb       atomic.Pointer[requestBuilder] // swapped by SetCredentials; each attempt reads it once
	enc      *encoder
	classify ClassifyFunc
	routes   delivery.RoutesFunc
	clock    budget.Clock
	log      *slog.Logger
}

var (
	_ delivery.BoundedDestination   = (*Destination)(nil)
	_ delivery.PreparingDestination = (*Destination)(nil)
)

// New builds the HTTP destination from cfg: the client (Config.HTTPClient, else one on
// Config.Transport, else the default client with Config.CAFile), always with this package's
// redirect policy. It fails only when the CA file cannot be used.
func New(cfg Config) (*Destination, error) {
	hc, err := buildHTTPClient(cfg)
	if err != nil {
		return nil, err
	}
	d := &Destination{
		hc:       hc,
		enc:      newEncoder(cfg.Gzip),
		classify: cfg.Classify,
		routes:   cfg.Routes,
		clock:    cfg.Clock,
		log:      cfg.Logger,
	}
	if d.classify == nil {
		d.classify = Classify
	}
	if d.clock == nil {
		d.clock = budget.System
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.rb.Store(newRequestBuilder(cfg))
	return d, nil
}

// buildHTTPClient applies Config.HTTPClient/Config.Transport and the redirect policy.
func buildHTTPClient(cfg Config) (*http.Client, error) {
	var hc *http.Client
	switch {
	case cfg.HTTPClient != nil:
		cp := *cfg.HTTPClient
		hc = &cp
	case cfg.Transport != nil:
		hc = &http.Client{Transport: cfg.Transport}
	default:
		var err error
		if hc, err = newHTTPClient(cfg); err != nil {
			return nil, err
		}
	}
	hc.CheckRedirect = checkRedirect
	return hc, nil
}

// SetCredentials changes the write key and the extra headers of the attempts that start from
// now on (a live reload of upload.write_key and upload.headers); the attempts in flight keep
// what they read. The endpoint, gzip and the request hook stay as New set them.
func (d *Destination) SetCredentials(writeKey string, headers map[string]string) {
	cur := d.rb.Load()
	next := *cur
	next.auth = basicAuth(writeKey)
	next.headers = maps.Clone(headers)
	d.rb.Store(&next)
}

// MaxInFlight is 0: Send is safe for concurrent use and the HTTP destination has no bound of
// its own (upload.concurrency and upload.max_concurrency bound it).
func (d *Destination) MaxInFlight() int { return 0 }

// Name is "http".
func (d *Destination) Name() string { return "http" }

// Close closes the client's idle connections.
func (d *Destination) Close() error {
	d.hc.CloseIdleConnections()
	return nil
}

// Send makes one attempt: the body (the one built ahead when fresh), the request, the POST,
// and the classifier's outcome of what came back.
func (d *Destination) Send(ctx context.Context, b delivery.Batch) delivery.Outcome {
	pre, _ := b.Prepared.(*body)
	body, err := d.bodyFor(b.Events, pre)
	if err != nil {
		return delivery.Outcome{Class: delivery.ClassAborted, Err: err}
	}
	defer body.Release()
	var trace SendTrace
	rb, err := d.builderFor(d.rb.Load(), b.Source)
	if err != nil {
		d.log.Error("cannot build the upload request; batch stays queued", "source", b.Source, "error", err)
		return delivery.Outcome{Class: delivery.ClassAborted, Err: err}
	}
	req, err := rb.build(trace.Context(ctx), body.Bytes(), b.Retry)
	if err != nil {
		d.log.Error("cannot build the upload request; batch stays queued", "error", err)
		return delivery.Outcome{Class: delivery.ClassAborted, Err: err}
	}
	resp, snippet, sendErr := send(d.hc, req, &trace)
	o := d.classify(resp, sendErr, d.clock.Now())
	// A replacement classifier may leave out what the response already says.
	if o.Status == 0 && resp != nil && o.Class != delivery.ClassAborted {
		o.Status = resp.StatusCode
	}
	if o.Err == nil && o.Status == 0 {
		o.Err = sendErr
	}
	o.Detail, o.Written, o.Bytes = snippet, trace.Written(), body.Plain
	return o
}

// Prepare builds the body of a batch's first attempt ahead of it; Send uses it when it is
// less than bodyMaxAge old. An encode error leaves nothing: Send encodes again and reports it.
func (d *Destination) Prepare(events [][]byte) any {
	b, err := d.enc.encode(events, d.clock.Now())
	if err != nil {
		return nil
	}
	return b
}

// Release returns a body built ahead that will not be sent.
func (d *Destination) Release(p any) {
	if b, ok := p.(*body); ok && b != nil {
		b.Release()
	}
}

// bodyMaxAge is how old a body built ahead of its first attempt may be and still be sent: its
// sentAt is the time it was built, and a collector corrects event timestamps with it. Older
// bodies (and every retry, which follows a wait) are built again.
const bodyMaxAge = time.Second

// bodyFor returns the body of an attempt of events: pre, when it was built ahead less than
// bodyMaxAge ago, else a new one (pre is released).
func (d *Destination) bodyFor(events [][]byte, pre *body) (*body, error) {
	now := d.clock.Now()
	if pre != nil {
		if age := now.Sub(pre.sentAt); age >= 0 && age <= bodyMaxAge {
			return pre, nil
		}
		pre.Release()
	}
	return d.enc.encode(events, now)
}
