package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// The status page's history: one sample per second for the last hour. With the columns below
// the ring holds 3600 × 14 int64s (the time and thirteen columns), about 390 KiB, allocated once.
const (
	sampleInterval = time.Second
	sampleCapacity = 3600
	maxResults     = 20 // seconds with upload attempts kept for "last results"
)

// snapshot is what one sample is read from.
type snapshot struct {
	stats   uploader.Stats
	codes   map[string]int64 // upload attempts since open, by HTTP status or error class
	refused map[string]int64 // ingest requests refused since open, by status (refusedCodes)
}

// refusedCodes are the refusals of ingest requests the page charts: a bad event (400), a body
// over limits.max_request_bytes (413), and a full queue, a failing disk or a shutdown (503).
var refusedCodes = [...]string{"400", "413", "503"}

// ingestRoutes are the routes SDKs send events to (routes.go), whose refusals are charted;
// the admin routes' answers are not refusals of events.
var ingestRoutes = map[string]bool{
	"/v1/batch": true, "/v1/import": true, "/v1/track": true, "/v1/identify": true,
	"/v1/page": true, "/v1/screen": true, "/v1/group": true, "/v1/alias": true,
}

// column is one sampled value. A counter column stores the change since the previous
// sample, so the page draws it as a rate without knowing when the process started.
type column struct {
	name    string
	counter bool
	read    func(snapshot) int64
}

// sampledColumns lists what the sampler keeps. The page charts every column it knows by name
// and ignores the others, so a new series (pending events, once the client's stats carry
// them) is one line here plus its name in the page's chart table.
func sampledColumns() []column {
	return []column{
		{name: "queue_events", read: func(s snapshot) int64 { return s.stats.Queue.Events }},
		{name: "queue_bytes", read: func(s snapshot) int64 { return s.stats.Queue.Bytes }},
		{name: "pending_events", read: func(s snapshot) int64 { return s.stats.Queue.PendingEvents }},
		{name: "dead_events", read: func(s snapshot) int64 { return s.stats.Dead.Events }},
		{name: "in_flight", read: func(s snapshot) int64 { return int64(s.stats.Upload.InFlight) }},
		{name: "concurrency_limit", read: func(s snapshot) int64 { return int64(s.stats.Upload.ConcurrencyLimit) }},
		{name: "enqueued", counter: true, read: func(s snapshot) int64 { return s.stats.Counters.EventsEnqueued }},
		{name: "uploaded", counter: true, read: func(s snapshot) int64 { return s.stats.Counters.EventsUploaded }},
		{name: "attempts", counter: true, read: func(s snapshot) int64 { return sumCodes(s.codes, false) }},
		{name: "errors", counter: true, read: func(s snapshot) int64 { return sumCodes(s.codes, true) }},
		{name: "refused_400", counter: true, read: func(s snapshot) int64 { return s.refused["400"] }},
		{name: "refused_413", counter: true, read: func(s snapshot) int64 { return s.refused["413"] }},
		{name: "refused_503", counter: true, read: func(s snapshot) int64 { return s.refused["503"] }},
	}
}

// Samples is the answer of GET /v1/samples: the sampled history, oldest first, as one array
// per column aligned with T.
type Samples struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	// Now is the agent's clock when the answer was built; the page draws the hour before it.
	Now time.Time `json:"now"`
	// Capacity is how many samples the agent keeps (one hour).
	Capacity int `json:"capacity"`
	// Counters names the columns that hold the change since the previous sample (rates);
	// the others are levels.
	Counters []string `json:"counters"`
	// T holds each sample's time in Unix milliseconds.
	T []int64 `json:"t"`
	// Series holds one array per column, aligned with T.
	Series map[string][]int64 `json:"series"`
	// Results lists the last seconds in which uploads were attempted, newest first, with the
	// attempts of each by HTTP status or error class.
	Results []ResultCount `json:"results"`
	// Codes counts every upload attempt since the agent started, by status or error class.
	Codes map[string]int64 `json:"codes"`
}

// ResultCount is one second's upload attempts by HTTP status or error class.
type ResultCount struct {
	At    time.Time        `json:"at"`
	Codes map[string]int64 `json:"codes"`
}

// sampler reads a snapshot every interval into a ring. Its clock is injected so tests step
// it without sleeping.
type sampler struct {
	clock    budget.Clock
	interval time.Duration
	read     func() snapshot
	cols     []column

	mu        sync.Mutex // guards the fields below
	ring      *ring
	prev      []int64          // last cumulative value of each counter column
	prevCodes map[string]int64 // attempts by code at the last sample
	codes     map[string]int64
	results   []ResultCount // newest last
}

func newSampler(clock budget.Clock, interval time.Duration, capacity int, read func() snapshot) *sampler {
	cols := sampledColumns()
	return &sampler{
		clock: clock, interval: interval, read: read, cols: cols,
		ring: newRing(capacity, len(cols)), prev: make([]int64, len(cols)),
	}
}

// run samples until ctx ends. The counters' values when it starts are the baseline, so the
// first sample's rates cover the first interval.
func (s *sampler) run(ctx context.Context) {
	s.baseline(s.read())
	for budget.Sleep(ctx, s.clock, s.interval, nil) == nil {
		s.take(s.clock.Now(), s.read())
	}
}

// baseline records the counters without adding a sample.
func (s *sampler) baseline(snap snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.cols {
		if c.counter {
			s.prev[i] = c.read(snap)
		}
	}
	s.prevCodes, s.codes = snap.codes, snap.codes
}

// take adds the sample of snap at now.
func (s *sampler) take(now time.Time, snap snapshot) {
	row := make([]int64, len(s.cols))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.cols {
		v := c.read(snap)
		if c.counter {
			v, s.prev[i] = max(v-s.prev[i], 0), v
		}
		row[i] = v
	}
	s.ring.add(now.UnixMilli(), row)
	if d := codeDelta(s.prevCodes, snap.codes); len(d) > 0 {
		s.results = append(s.results, ResultCount{At: now.UTC().Truncate(time.Millisecond), Codes: d})
		if len(s.results) > maxResults {
			s.results = append(s.results[:0], s.results[len(s.results)-maxResults:]...)
		}
	}
	s.prevCodes, s.codes = snap.codes, snap.codes
}

// samples returns the samples taken after sinceMs (Unix milliseconds; 0 for all).
func (s *sampler) samples(sinceMs int64) Samples {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, vals := s.ring.since(sinceMs)
	out := Samples{
		IntervalSeconds: s.interval.Seconds(),
		Now:             s.clock.Now().UTC().Truncate(time.Millisecond),
		Capacity:        s.ring.capacity(),
		Counters:        []string{},
		T:               ts,
		Series:          make(map[string][]int64, len(s.cols)),
		Results:         make([]ResultCount, 0, len(s.results)),
		Codes:           make(map[string]int64, len(s.codes)),
	}
	for i, c := range s.cols {
		out.Series[c.name] = vals[i]
		if c.counter {
			out.Counters = append(out.Counters, c.name)
		}
	}
	for i := len(s.results) - 1; i >= 0; i-- {
		out.Results = append(out.Results, s.results[i])
	}
	for k, v := range s.codes {
		out.Codes[k] = v
	}
	return out
}

// codeDelta returns the codes whose count grew from prev to cur, with the growth.
func codeDelta(prev, cur map[string]int64) map[string]int64 {
	var d map[string]int64
	for k, v := range cur {
		if n := v - prev[k]; n > 0 {
			if d == nil {
				d = make(map[string]int64)
			}
			d[k] = n
		}
	}
	return d
}

// sumCodes adds up attempts: all of them, or with failed only those that did not get a 2xx.
func sumCodes(codes map[string]int64, failed bool) int64 {
	var n int64
	for k, v := range codes {
		if !failed || !isSuccessCode(k) {
			n += v
		}
	}
	return n
}

// isSuccessCode reports whether an attempt's code says success: a 2xx status, or "ok" (a
// destination without HTTP statuses, Kafka).
func isSuccessCode(code string) bool {
	return code == "ok" || len(code) == 3 && code[0] == '2' && code[1] >= '0' && code[1] <= '9' && code[2] >= '0' && code[2] <= '9'
}

// counterValues reads a counter vector's values by the value of one label.
func counterValues(c prometheus.Collector, label string) map[string]int64 {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	out := make(map[string]int64)
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil || d.Counter == nil {
			continue
		}
		for _, lp := range d.Label {
			if lp.GetName() == label {
				out[lp.GetValue()] = int64(d.Counter.GetValue())
			}
		}
	}
	return out
}

// ingestRefusals reads ingest_requests_total{route,code}: the requests of the ingest routes
// answered with one of refusedCodes, by code.
func ingestRefusals(c prometheus.Collector) map[string]int64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	out := make(map[string]int64, len(refusedCodes))
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil || d.Counter == nil {
			continue
		}
		var route, code string
		for _, lp := range d.Label {
			switch lp.GetName() {
			case "route":
				route = lp.GetValue()
			case "code":
				code = lp.GetValue()
			}
		}
		if ingestRoutes[route] && slices.Contains(refusedCodes[:], code) {
			out[code] += int64(d.Counter.GetValue())
		}
	}
	return out
}

// ring is a fixed-size circular buffer of timestamped rows; the oldest row is overwritten
// once it is full.
type ring struct {
	cols  int
	t     []int64
	vals  []int64 // row i is vals[i*cols : (i+1)*cols]
	start int     // index of the oldest row
	n     int     // rows held
}

func newRing(capacity, cols int) *ring {
	return &ring{cols: cols, t: make([]int64, capacity), vals: make([]int64, capacity*cols)}
}

func (r *ring) capacity() int { return len(r.t) }

// add appends a row, overwriting the oldest when full.
func (r *ring) add(t int64, row []int64) {
	i := (r.start + r.n) % len(r.t)
	if r.n == len(r.t) {
		r.start = (r.start + 1) % len(r.t)
	} else {
		r.n++
	}
	r.t[i] = t
	copy(r.vals[i*r.cols:(i+1)*r.cols], row)
}

// since returns, oldest first, the times after sinceMs and one slice per column.
func (r *ring) since(sinceMs int64) ([]int64, [][]int64) {
	ts := []int64{}
	cols := make([][]int64, r.cols)
	for c := range cols {
		cols[c] = []int64{}
	}
	for k := range r.n {
		i := (r.start + k) % len(r.t)
		if r.t[i] <= sinceMs {
			continue
		}
		ts = append(ts, r.t[i])
		for c := range cols {
			cols[c] = append(cols[c], r.vals[i*r.cols+c])
		}
	}
	return ts, cols
}
