package agent

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outboxhq/outbox/pkg/uploader"
)

const namespace = "outbox"

// Metrics holds the agent's Prometheus metrics on its own registry (never the global one).
// Counters and histograms are fed by the uploader through Hooks and by the ingest handlers;
// gauges (queue, dead letters, store file, last success) are read from the client's Stats at
// scrape time.
//
// Construction order: NewMetrics first, pass Hooks() to uploader.Open, then hand both the
// client and the Metrics to New, which attaches the client as the gauge source.
type Metrics struct {
	reg *prometheus.Registry

	enqueued       prometheus.Counter
	uploaded       prometheus.Counter
	dead           prometheus.Counter
	dropped        *prometheus.CounterVec
	uploadRequests *prometheus.CounterVec
	uploadDuration prometheus.Histogram
	retries        *prometheus.CounterVec
	retryWait      *prometheus.CounterVec
	batchEvents    prometheus.Histogram
	ingest         *prometheus.CounterVec
	commitDuration prometheus.Histogram
	reloads        *prometheus.CounterVec // outbox_config_reloads_total (reload.go)
	sourcesRefused prometheus.Counter     // outbox_sources_refused_total (sources.go)
	authRefused    *prometheus.CounterVec // outbox_ingest_auth_refused_total (refusals.go)

	source atomic.Pointer[func() gaugeValues] // gauge source, set by New
}

// gaugeValues are the point-in-time values exported as gauges.
type gaugeValues struct {
	queueEvents, queueBytes     float64
	pendingEvents, pendingBytes float64 // accepted by EnqueueAsync, not yet committed
	oldestAge                   float64 // seconds; 0 when the queue is empty
	deadEvents                  float64
	fileBytes                   float64
	lastSuccess                 time.Time // zero when no upload has succeeded yet
	inFlight, limit             float64   // batches in flight, and the limit on them
	authPaused                  float64   // 1 while delivery is paused on refused credentials
	sources                     []uploader.SourceStats
}

// NewMetrics creates the metrics and registers them on reg (nil → a new registry). It fails
// when reg already holds metrics with the same names.
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	}
	m := &Metrics{
		reg:            reg,
		enqueued:       counter("events_enqueued_total", "Events accepted and made durable through ingest."),
		uploaded:       counter("events_uploaded_total", "Events the collector accepted."),
		dead:           counter("events_dead_total", "Events moved to the dead-letter bucket."),
		dropped:        counterVec("events_dropped_total", "Events dropped, by reason (drop_oldest, dead_overflow, checksum, suppressed, purged, source_full).", "reason"),
		uploadRequests: counterVec("upload_requests_total", "Upload attempts, by HTTP status or network error class.", "code"),
		uploadDuration: histogram("upload_duration_seconds", "Duration of one upload attempt.",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}),
		retries:     counterVec("retries_total", "Retries scheduled, by path (rate_limit or backoff).", "path"),
		retryWait:   counterVec("retry_wait_seconds_total", "Seconds of retry waits scheduled, by path.", "path"),
		batchEvents: histogram("batch_events", "Events per upload attempt.", []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000}),
		ingest:      counterVec("ingest_requests_total", "Ingest and admin HTTP requests, by route and status code.", "route", "code"),
		commitDuration: histogram("store_commit_duration_seconds", "Duration of one store commit (with fsync when queue.sync is always).",
			prometheus.ExponentialBuckets(0.0005, 2, 12)),
	}
	// Series with known labels exist at 0 from the start, so alerts and rate() see them
	// before the first event.
	for _, p := range []string{uploader.PathRateLimit, uploader.PathBackoff} {
		m.retries.WithLabelValues(p)
		m.retryWait.WithLabelValues(p)
	}
	for _, r := range uploader.DropReasons() {
		m.dropped.WithLabelValues(r)
	}
	cs := []prometheus.Collector{m.enqueued, m.uploaded, m.dead, m.dropped, m.uploadRequests, m.uploadDuration,
		m.retries, m.retryWait, m.batchEvents, m.ingest, m.commitDuration, newGaugeCollector(m)}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering agent metrics: %w", err)
		}
	}
	if err := m.registerReloads(); err != nil {
		return nil, err
	}
	if err := m.registerSources(); err != nil {
		return nil, err
	}
	if err := m.registerRefusals(); err != nil {
		return nil, err
	}
	return m, nil
}

// Registry returns the registry the metrics are registered on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// setSource installs the function the gauges are read from at scrape time.
func (m *Metrics) setSource(f func() gaugeValues) { m.source.Store(&f) }

// observeIngest counts one handled request.
func (m *Metrics) observeIngest(route string, code int) {
	m.ingest.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

// gaugeCollector exports gaugeValues, read once per scrape.
type gaugeCollector struct {
	m                                                                      *Metrics
	queueEvents, queueBytes, oldestAge, deadEvents, fileBytes, lastSuccess *prometheus.Desc
	pendingEvents, pendingBytes                                            *prometheus.Desc
	inFlight, limit, authPaused                                            *prometheus.Desc
}

func newGaugeCollector(m *Metrics) *gaugeCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, nil, nil)
	}
	return &gaugeCollector{
		m:           m,
		queueEvents: desc("queue_events", "Events waiting in the queue."),
		queueBytes:  desc("queue_bytes", "Stored bytes of the events waiting in the queue."),
		oldestAge:   desc("queue_oldest_age_seconds", "Age of the oldest waiting event; 0 when the queue is empty."),
		deadEvents:  desc("dead_events", "Events in the dead-letter bucket."),
		fileBytes:   desc("store_file_bytes", "Size of the bbolt file."),
		lastSuccess: desc("last_upload_success_timestamp_seconds",
			"Unix time of the last successful upload; 0 when none yet. Alert on its age."),
		pendingEvents: desc("pending_events", "Events accepted by EnqueueAsync and not yet committed to the queue."),
		pendingBytes:  desc("pending_bytes", "Normalised bytes of the events accepted by EnqueueAsync and not yet committed."),
		inFlight:      desc("upload_in_flight", "Batches sent and not yet delivered or dead-lettered."),
		limit: desc("upload_concurrency_limit",
			"How many batches may be in flight now: upload.concurrency, or the adaptive limit under auto."),
		authPaused: desc("upload_auth_paused",
			"1 while delivery is paused because the destination refuses our credentials (401/403): fix upload.write_key and reload; 0 otherwise."),
	}
}

// Describe implements prometheus.Collector.
func (g *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.queueEvents, g.queueBytes, g.oldestAge, g.deadEvents, g.fileBytes, g.lastSuccess,
		g.pendingEvents, g.pendingBytes, g.inFlight, g.limit, g.authPaused} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Without a source (no client attached yet) it
// exports nothing.
func (g *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	src := g.m.source.Load()
	if src == nil {
		return
	}
	v := (*src)()
	last := 0.0
	if !v.lastSuccess.IsZero() {
		last = float64(v.lastSuccess.UnixNano()) / 1e9
	}
	for _, p := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{g.queueEvents, v.queueEvents}, {g.queueBytes, v.queueBytes}, {g.oldestAge, v.oldestAge},
		{g.deadEvents, v.deadEvents}, {g.fileBytes, v.fileBytes}, {g.lastSuccess, last},
		{g.pendingEvents, v.pendingEvents}, {g.pendingBytes, v.pendingBytes},
		{g.inFlight, v.inFlight}, {g.limit, v.limit}, {g.authPaused, v.authPaused},
	} {
		ch <- prometheus.MustNewConstMetric(p.d, prometheus.GaugeValue, p.v)
	}
}
