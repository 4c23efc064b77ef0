package agent_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// setup describes one agent under test; the zero value is an open agent over a healthy sink
// that uploads only on flush.
type setup struct {
	agent    agent.Config
	upload   func(*uploader.Config)
	faults   string // sink fault spec
	opts     []uploader.Option
	sinkOpts sink.Options
}

// harness is a running agent on a real loopback listener, its uploader on a temp dir and
// the sink it uploads to.
type harness struct {
	t      testing.TB
	sink   *sink.Server
	client *uploader.Client
	// clientConfig is the configuration the client was opened with, for a Reconfigure.
	clientConfig uploader.Config
	agent        *agent.Agent
	metrics      *agent.Metrics
	url          string
}

// start runs an agent for the test and shuts it down on cleanup.
func start(t testing.TB, s setup) *harness {
	t.Helper()
	var snk *sink.Server
	if s.faults != "" {
		snk = sinktest.StartScript(t, s.faults)
	} else {
		snk = sinktest.Start(t, s.sinkOpts)
	}
	ucfg := uploader.DefaultConfig()
	ucfg.DataDir = t.TempDir()
	ucfg.Upload.Endpoint = snk.URL() + "/v1/batch"
	ucfg.Batch.Interval = time.Hour // tests upload through POST /v1/flush
	if s.upload != nil {
		s.upload(&ucfg)
	}
	m, err := agent.NewMetrics(nil)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	client, err := segment.Open(ucfg, append([]uploader.Option{uploader.WithHooks(m.Hooks())}, s.opts...)...)
	if err != nil {
		t.Fatalf("uploader.Open: %v", err)
	}
	a, err := agent.New(s.agent, client, m)
	if err != nil {
		_ = client.Close(context.Background())
		t.Fatalf("agent.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil && !errors.Is(err, errs.ErrClosed) {
			t.Errorf("Shutdown: %v", err)
		}
		// ErrShuttingDown: the test ended before the Serve goroutine got going.
		if err := <-errc; err != nil && !errors.Is(err, errs.ErrClosed) && !errors.Is(err, agent.ErrShuttingDown) {
			t.Errorf("Serve: %v", err)
		}
	})
	return &harness{t: t, sink: snk, client: client, clientConfig: ucfg, agent: a, metrics: m, url: "http://" + ln.Addr().String()}
}

// req is one HTTP request to the agent.
type req struct {
	method, path string
	body         []byte
	gzip         bool
	header       map[string]string
	writeKey     string // Basic auth username
}

// resp is an agent answer.
type resp struct {
	code   int
	header http.Header
	body   []byte
}

// json decodes the body into v, failing the test when it is not JSON.
func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", r.code, err, r.body)
	}
}

// do sends rq and reads the whole answer.
func (h *harness) do(rq req) resp {
	h.t.Helper()
	body := rq.body
	if rq.gzip {
		body = gzipBytes(h.t, body)
	}
	method := rq.method
	if method == "" {
		method = http.MethodPost
	}
	r, err := http.NewRequest(method, h.url+rq.path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("new request: %v", err)
	}
	if rq.gzip {
		r.Header.Set("Content-Encoding", "gzip")
	}
	if body != nil || method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		if k == "Host" {
			r.Host = v // the client sends r.Host, not a Host header
			continue
		}
		r.Header.Set(k, v)
	}
	if rq.writeKey != "" {
		r.SetBasicAuth(rq.writeKey, "")
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, rq.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		h.t.Fatalf("reading answer: %v", err)
	}
	return resp{code: res.StatusCode, header: res.Header, body: b}
}

// post sends body to path.
func (h *harness) post(path, body string) resp {
	h.t.Helper()
	return h.do(req{path: path, body: []byte(body)})
}

// get fetches path.
func (h *harness) get(path string) resp {
	h.t.Helper()
	return h.do(req{method: http.MethodGet, path: path})
}

// flush runs POST /v1/flush?wait=10s and returns its result.
func (h *harness) flush() agent.FlushResult {
	h.t.Helper()
	r := h.post("/v1/flush?wait=10s", "")
	if r.code != http.StatusOK {
		h.t.Fatalf("flush: %d %s", r.code, r.body)
	}
	var fr agent.FlushResult
	r.json(h.t, &fr)
	return fr
}

// status fetches /v1/status.
func (h *harness) status() agent.Status {
	h.t.Helper()
	r := h.get("/v1/status")
	if r.code != http.StatusOK {
		h.t.Fatalf("status: %d %s", r.code, r.body)
	}
	var st agent.Status
	r.json(h.t, &st)
	return st
}

// stored is how many events the client has accepted since it opened.
func (h *harness) stored() int64 { return h.client.Stats().Counters.EventsEnqueued }

// sinkEvents decodes every event the sink accepted.
func (h *harness) sinkEvents() []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, raw := range h.sink.Events() {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			h.t.Fatalf("sink event is not JSON: %v: %s", err, raw)
		}
		out = append(out, m)
	}
	return out
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
