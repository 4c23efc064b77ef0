// Command peers runs the clients outbox is compared with in `make bench` (cmd/outbox-bench,
// section "peers"), each in its own process, on the events file the bench writes:
//
//   - posthog: github.com/posthog/posthog-go, the in-memory Go client, used from one
//     goroutine (Enqueue per event, then Close, which flushes);
//   - segment: a plain HTTP batch client doing what analytics-go v3 does (analytics-go is not
//     on the module proxy here): json.Marshal per event, 250-event batches POSTed to
//     /v1/batch in the background (up to 4 at a time), no gzip, Basic auth with a write key.
//
// It is its own Go module so that outbox's go.mod does not depend on posthog-go. It prints
// "START" when its clock starts, then one JSON line: events, elapsed_ns (first event to the
// last one delivered), cpu_ns (user+sys from getrusage over the same span), and for posthog
// failed: the events posthog-go reported it gave up on (a collector that fails requests).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/posthog/posthog-go"
)

// trackEvent is a Segment track event as an application holds it (cmd/outbox-bench has the
// same type).
type trackEvent struct {
	Type        string         `json:"type"`
	Event       string         `json:"event"`
	UserID      string         `json:"userId"`
	AnonymousID string         `json:"anonymousId"`
	MessageID   string         `json:"messageId"`
	Timestamp   time.Time      `json:"timestamp"`
	Properties  map[string]any `json:"properties"`
	Context     map[string]any `json:"context"`
}

type result struct {
	Events    int64 `json:"events"`
	ElapsedNS int64 `json:"elapsed_ns"`
	CPUNS     int64 `json:"cpu_ns"`
	Failed    int64 `json:"failed,omitempty"` // events posthog-go reported it gave up on
}

func main() {
	client := flag.String("client", "", "posthog or segment")
	events := flag.String("events", "", "events file, one JSON event per line")
	endpoint := flag.String("endpoint", "", "collector base URL (posthog: +/batch/; segment: the full /v1/batch URL)")
	flag.Parse()
	if err := run(*client, *events, *endpoint, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(client, path, endpoint string, out io.Writer) error {
	evs, err := readEvents(path)
	if err != nil {
		return err
	}
	var send func([]trackEvent) error
	var failed int64
	switch client {
	case "posthog":
		send = func(evs []trackEvent) (err error) { failed, err = runPosthog(evs, endpoint); return err }
		// The app's events become posthog Captures before the clock starts: the context
		// travels as a property, so the payload carries the same information.
		for i := range evs {
			evs[i].Properties["context"] = evs[i].Context
		}
	case "segment":
		send = func(evs []trackEvent) error { return runSegment(evs, endpoint) }
	default:
		return fmt.Errorf("-client %q: want posthog or segment", client)
	}
	fmt.Fprintln(out, "START")
	cpu0, start := cpu(), time.Now()
	if err := send(evs); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(result{
		Events: int64(len(evs)), ElapsedNS: time.Since(start).Nanoseconds(), CPUNS: (cpu() - cpu0).Nanoseconds(), Failed: failed,
	})
}

// runPosthog enqueues every event from one goroutine, then closes the client, which sends
// what it still holds. It returns how many events posthog-go reported it gave up on (the
// bench decides whether that is an error: against a failing collector it is the loss).
func runPosthog(evs []trackEvent, endpoint string) (int64, error) {
	var mu sync.Mutex
	var failed int64
	c, err := posthog.NewWithConfig("phc_bench", posthog.Config{
		Endpoint: endpoint,
		Callback: callback{failure: func(n int) { mu.Lock(); failed += int64(n); mu.Unlock() }},
		Logger:   quiet{},
	})
	if err != nil {
		return 0, err
	}
	for i := range evs {
		e := &evs[i]
		err := c.Enqueue(posthog.Capture{DistinctId: e.UserID, Event: e.Event, Timestamp: e.Timestamp, Properties: e.Properties})
		if err != nil {
			return 0, err
		}
	}
	if err := c.Close(); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	return failed, nil
}

// callback counts failures reported by posthog-go.
type callback struct{ failure func(int) }

func (c callback) Success(posthog.APIMessage)        {}
func (c callback) Failure(posthog.APIMessage, error) { c.failure(1) }

// quiet discards posthog-go's log lines.
type quiet struct{}

func (quiet) Logf(string, ...any)   {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Debugf(string, ...any) {}
func (quiet) Warnf(string, ...any)  {}

// runSegment is the analytics-go-like client: events marshalled one by one into 250-event
// batches, each POSTed by one of 4 sender goroutines.
func runSegment(evs []trackEvent, endpoint string) error {
	const batchSize, senders = 250, 4
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	bodies := make(chan []byte, senders)
	errc := make(chan error, senders)
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for b := range bodies {
				if err := post(hc, endpoint, b); err != nil {
					errc <- err
					for range bodies { // drain, so the producer never blocks
					}
					return
				}
			}
		})
	}
	var buf bytes.Buffer
	n := 0
	flush := func() {
		buf.WriteString(`],"sentAt":"`)
		buf.WriteString(time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
		buf.WriteString(`"}`)
		bodies <- bytes.Clone(buf.Bytes())
		buf.Reset()
		n = 0
	}
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			return err
		}
		if n == 0 {
			buf.WriteString(`{"batch":[`)
		} else {
			buf.WriteByte(',')
		}
		buf.Write(b)
		if n++; n == batchSize {
			flush()
		}
	}
	if n > 0 {
		flush()
	}
	close(bodies)
	wg.Wait()
	close(errc)
	return errors.Join(<-errc)
}

func post(hc *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("wk_bench", "")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d", url, res.StatusCode)
	}
	return nil
}

func readEvents(path string) ([]trackEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []trackEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e trackEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, len(evs)+1, err)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
