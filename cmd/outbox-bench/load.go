package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ingestLoad describes an HTTP load on POST /v1/batch: clients concurrent clients, each
// sending perRequest events per request, events first .. first+total-1. Each client builds
// one body of perRequest events (made by gen) before the clock starts and, per request,
// only rewrites its fixed-width messageIds to the request's event numbers (batchBody), so
// every messageId is distinct and the load costs the shared cores little beyond HTTP.
type ingestLoad struct {
	url        string      // the agent's base URL
	gen        payloadFunc // event i of the run
	clients    int
	perRequest int
	first      int
	total      int
	writeKey   string // sent as the Basic auth username when set (the source it selects)
}

// maxCounter bounds the event numbers that fit in an idDigits-digit messageId counter.
const maxCounter = 1_000_000_000_000

// loadResult is what an ingest load measured.
type loadResult struct {
	events   int
	requests int
	elapsed  time.Duration // first request sent → last answer read
}

func (r loadResult) rate() float64 { return float64(r.events) / r.elapsed.Seconds() }

// run sends the load and fails on the first answer that is not 200.
func (l ingestLoad) run(ctx context.Context) (loadResult, error) {
	if l.first+l.total > maxCounter {
		return loadResult{}, fmt.Errorf("events %d..%d: messageIds have %d digits", l.first, l.first+l.total-1, idDigits)
	}
	bodies := make([]*batchBody, l.clients)
	for c := range bodies {
		var err error
		if bodies[c], err = newBatchBody(l.gen, l.first+c*l.perRequest, l.perRequest); err != nil {
			return loadResult{}, fmt.Errorf("build request body: %w", err)
		}
	}
	// A write buffer the size of a body sends it in one write instead of 4 KB ones.
	tr := &http.Transport{MaxIdleConnsPerHost: l.clients, MaxConnsPerHost: l.clients, WriteBufferSize: 64 << 10}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	nreq := (l.total + l.perRequest - 1) / l.perRequest
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next    atomic.Int64
		sent    atomic.Int64
		errOnce sync.Once
		firstEr error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		errOnce.Do(func() { firstEr = err; cancel() })
	}
	start := time.Now()
	for _, bb := range bodies {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= nreq || ctx.Err() != nil {
					return
				}
				n := min(l.perRequest, l.total-k*l.perRequest)
				// The previous request's answer has been read, and the agent answers
				// only once it has read the whole body: the buffer is free to patch.
				body := bb.patch(l.first+k*l.perRequest, n)
				if err := postOnce(ctx, hc, l.url+"/v1/batch", l.writeKey, body); err != nil {
					fail(fmt.Errorf("request %d: %w", k, err))
					return
				}
				sent.Add(int64(n))
			}
		})
	}
	wg.Wait()
	res := loadResult{events: int(sent.Load()), requests: nreq, elapsed: time.Since(start)}
	return res, firstEr
}

// postOnce posts one batch body, with writeKey as the Basic auth username when it is set (as
// Segment SDKs send theirs), and wants a 200.
func postOnce(ctx context.Context, hc *http.Client, url, writeKey string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if writeKey != "" {
		req.SetBasicAuth(writeKey, "")
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", res.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
