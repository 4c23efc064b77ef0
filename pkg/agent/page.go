package agent

import (
	"bytes"
	_ "embed" // the status page's files
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxhq/outbox/pkg/budget"
)

// The status page is written as three files (markup, styles, script) and served as one, the
// styles and the script inlined, so the page needs nothing but the agent (no network, no CDN).
var (
	//go:embed page.html
	pageMarkup []byte
	//go:embed page.css
	pageStyles []byte
	//go:embed page.js
	pageScript []byte

	pageHTML = inlinePage(pageMarkup, pageStyles, pageScript)
)

// inlinePage puts the styles and the script in place of the markers page.html holds for them.
func inlinePage(markup, styles, script []byte) []byte {
	out := bytes.Replace(markup, []byte("/* page.css */\n"), styles, 1)
	return bytes.Replace(out, []byte("// page.js\n"), script, 1)
}

// pageCSP lets the page run only its own inline script and style and talk only to the agent
// that served it; a stray external asset would fail loudly in the browser test.
const pageCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// statusPage serves GET / and the history it charts, GET /v1/samples. Its sampler runs from
// New until Shutdown.
type statusPage struct {
	sampler       *sampler
	queueMaxBytes int64
}

// newStatusPage builds the page over the agent's client and metrics. Upload attempts by code
// come from the metrics (fed by the uploader hooks); without hooks they stay at zero.
func (a *Agent) newStatusPage() *statusPage {
	clock := a.cfg.Clock
	if clock == nil {
		clock = budget.SystemClock{}
	}
	read := func() snapshot {
		return snapshot{
			stats:   a.client.Stats(),
			codes:   counterValues(a.metrics.uploadRequests, "code"),
			refused: ingestRefusals(a.metrics.ingest),
		}
	}
	return &statusPage{sampler: newSampler(clock, sampleInterval, sampleCapacity, read), queueMaxBytes: a.cfg.QueueMaxBytes}
}

// serveHTML serves GET /.
func (p *statusPage) serveHTML(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(pageHTML)
}

// PageSamples is the answer of GET /v1/samples: the sampled history plus what the page
// needs to put it in proportion.
type PageSamples struct {
	Samples
	// QueueMaxBytes is queue.max_bytes when the agent was told it; 0 when not.
	QueueMaxBytes int64 `json:"queue_max_bytes,omitempty"`
}

// serveSamples serves GET /v1/samples[?since=<unix ms>]: the samples taken after since (all
// of the last hour without it).
func (p *statusPage) serveSamples(w http.ResponseWriter, r *http.Request) {
	var since int64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("since=%q: want Unix milliseconds, for example since=1735689600000", v))
			return
		}
		since = n
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, PageSamples{Samples: p.sampler.samples(since), QueueMaxBytes: p.queueMaxBytes})
}

// exportQueueMaxBytes exports n as the outbox_queue_max_bytes gauge, so that alerts can
// compare outbox_queue_bytes with it. Registering it again (a second Agent over the same
// Metrics) updates the value.
func (m *Metrics) exportQueueMaxBytes(n int64) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "queue_max_bytes",
		Help: "queue.max_bytes: stored event bytes at which the queue is full and queue.when_full applies.",
	})
	err := m.reg.Register(g)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(prometheus.Gauge); ok {
			g, err = existing, nil
		}
	}
	if err != nil {
		return fmt.Errorf("registering outbox_queue_max_bytes: %w", err)
	}
	g.Set(float64(n))
	return nil
}
