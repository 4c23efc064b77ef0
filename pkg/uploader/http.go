package uploader

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// httpDestination is the built-in destination: a POST of the Segment batch body to a
// collector (upload.endpoint), with the headers, the request hook, the redirect policy and the
// classifier of this package. It builds a batch's body ahead of its first attempt when the
// worker asks (prepare), beside the request in flight.
type httpDestination struct {
	hc       *http.Client
	rb       atomic.Pointer[requestBuilder] // swapped by reconfigure; each attempt reads it once
	enc      *encoder
	classify ClassifyFunc
	clock    budget.Clock
	log      *slog.Logger
}

// newHTTPDestination builds the HTTP destination from the upload configuration and the
// options (WithHTTPClient, WithTransport, WithRequestHook, WithClassifier).
func newHTTPDestination(cfg UploadConfig, o options, clock budget.Clock, log *slog.Logger) (*httpDestination, error) {
	hc, err := buildHTTPClient(cfg, o)
	if err != nil {
		return nil, err
	}
	d := &httpDestination{
		hc:       hc,
		enc:      newEncoder(cfg.Gzip),
		classify: o.classify,
		clock:    clock,
		log:      log,
	}
	if d.classify == nil {
		d.classify = Classify
	}
	d.rb.Store(newRequestBuilder(cfg, o.hook))
	return d, nil
}

// buildHTTPClient applies WithHTTPClient/WithTransport and the redirect policy.
func buildHTTPClient(cfg UploadConfig, o options) (*http.Client, error) {
	var hc *http.Client
	switch {
	case o.httpClient != nil:
		cp := *o.httpClient
		hc = &cp
	case o.transport != nil:
		hc = &http.Client{Transport: o.transport}
	default:
		var err error
		if hc, err = newHTTPClient(cfg); err != nil {
			return nil, err
		}
	}
	hc.CheckRedirect = checkRedirect
	return hc, nil
}

// MaxInFlight is 0: Send is safe for concurrent use and the HTTP destination has no bound of
// its own (upload.concurrency and upload.max_concurrency bound it).
func (d *httpDestination) MaxInFlight() int { return 0 }

// Name is "http".
func (d *httpDestination) Name() string { return "http" }

// Close closes the client's idle connections.
func (d *httpDestination) Close() error {
	d.hc.CloseIdleConnections()
	return nil
}

// Send makes one attempt: the body (the one built ahead when fresh), the request, the POST,
// and the classifier's outcome of what came back.
func (d *httpDestination) Send(ctx context.Context, b Batch) Outcome {
	pre, _ := b.Prepared.(*body)
	body, err := d.bodyFor(b.Events, pre)
	if err != nil {
		return Outcome{Class: ClassAborted, Err: err}
	}
	defer body.Release()
	var trace SendTrace
	req, err := d.rb.Load().build(trace.Context(ctx), body.Bytes(), b.Retry)
	if err != nil {
		d.log.Error("cannot build the upload request; batch stays queued", "error", err)
		return Outcome{Class: ClassAborted, Err: err}
	}
	resp, snippet, sendErr := send(d.hc, req, &trace)
	o := d.classify(resp, sendErr, d.clock.Now())
	// A replacement classifier may leave out what the response already says.
	if o.Status == 0 && resp != nil && o.Class != ClassAborted {
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
func (d *httpDestination) Prepare(events [][]byte) any {
	b, err := d.enc.encode(events, d.clock.Now())
	if err != nil {
		return nil
	}
	return b
}

// Release returns a body built ahead that will not be sent.
func (d *httpDestination) Release(p any) {
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
func (d *httpDestination) bodyFor(events [][]byte, pre *body) (*body, error) {
	now := d.clock.Now()
	if pre != nil {
		if age := now.Sub(pre.sentAt); age >= 0 && age <= bodyMaxAge {
			return pre, nil
		}
		pre.Release()
	}
	return d.enc.encode(events, now)
}
