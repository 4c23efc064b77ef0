package uploader

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/queue"
)

// addOf leases a batch of source under g, as the dispatcher does.
func addOf(g *gate, source string) *lease {
	return g.add(&queue.Lease{Batch: &queue.Batch{Source: source}})
}

var outage = &delivery.Outcome{Class: delivery.ClassRetryable, Status: 503}

// Each source owns its hold and its breaker, and sources that share an endpoint share its
// limit: the gate's policies with several sources on a fake clock. Every case leases batches
// of the sources named in leases (in that order), runs setup, then asks the gate to begin
// each lease in order and for room to lease each source.
func TestGate_Sources_EachSourceHoldsOnlyItself(t *testing.T) {
	endpoints := map[string]string{"a": "shared", "b": "shared", "eu": "eu"}
	tests := []struct {
		name        string
		concurrency string
		leases      []string
		setup       func(t *testing.T, g *gate, ls []*lease, clk *budgettest.Clock)
		admitted    string // per lease: y admitted, n not, - not asked (the worker would not ask)
		leasable    map[string]bool
		paused      map[string]string // source → SourceStats.PausedReason
	}{
		{
			name: "a Retry-After of one source holds that source only", concurrency: "4",
			leases: []string{"a", "b"},
			setup: func(t *testing.T, g *gate, _ []*lease, clk *budgettest.Clock) {
				g.pauseUntil("a", clk.Now().Add(30*time.Second))
			},
			admitted: "ny",
			leasable: map[string]bool{"a": true, "b": true, "eu": true}, // a ahead of its hold's end
			paused:   map[string]string{"a": PausedRetryAfter, "b": ""},
		},
		{
			name: "a source on a Retry-After is leased ahead of its end up to its endpoint's limit", concurrency: "2",
			leases: []string{"a", "a"},
			setup: func(t *testing.T, g *gate, _ []*lease, clk *budgettest.Clock) {
				g.pauseUntil("a", clk.Now().Add(30*time.Second))
			},
			admitted: "nn",
			leasable: map[string]bool{"a": false, "b": true, "eu": true},
		},
		{
			name: "the sources on a Retry-After share their endpoint's limit of batches leased ahead", concurrency: "2",
			leases: []string{"a", "b", "eu"},
			setup: func(t *testing.T, g *gate, _ []*lease, clk *budgettest.Clock) {
				for _, s := range []string{"a", "b", "eu"} {
					g.pauseUntil(s, clk.Now().Add(30*time.Second))
				}
			},
			admitted: "nnn",
			leasable: map[string]bool{"a": false, "b": false, "eu": true},
		},
		{
			name: "a Retry-After ends at its deadline", concurrency: "4",
			leases: []string{"a", "b"},
			setup: func(t *testing.T, g *gate, _ []*lease, clk *budgettest.Clock) {
				g.pauseUntil("a", clk.Now().Add(30*time.Second))
				clk.Advance(30 * time.Second)
			},
			admitted: "yy",
			leasable: map[string]bool{"a": true, "b": true},
			paused:   map[string]string{"a": ""},
		},
		{
			name: "refused credentials of one source hold that source only, its head probing", concurrency: "4",
			leases: []string{"a", "a", "b"},
			setup: func(t *testing.T, g *gate, _ []*lease, _ *budgettest.Clock) {
				g.refuse("a", "401", "sources.a.upload_write_key")
			},
			admitted: "nny",
			leasable: map[string]bool{"a": false, "b": true},
			paused:   map[string]string{"a": PausedAuthRefused, "b": ""},
		},
		{
			name: "an outage of one source opens its breaker only", concurrency: "4",
			leases: []string{"a", "b"},
			setup: func(t *testing.T, g *gate, ls []*lease, _ *budgettest.Clock) {
				if !g.tryBegin(ls[0].seq).admitted {
					t.Fatal("a's first attempt not admitted")
				}
				g.finish(ls[0].seq, outage, time.Millisecond) // nothing else in flight: open
			},
			admitted: "yy", // a's one probe; b as if a had no outage
			leasable: map[string]bool{"a": false, "b": true},
			paused:   map[string]string{"a": PausedBreakerOpen, "b": ""},
		},
		{
			name: "sources sharing an endpoint share its limit, another endpoint has its own", concurrency: "2",
			leases:   []string{"a", "b", "a", "eu"},
			admitted: "yyny",
			leasable: map[string]bool{"a": false, "b": false, "eu": true},
		},
		{
			name: "the batches of a held source take no place under the shared limit", concurrency: "2",
			leases: []string{"a", "a", "b", "b"},
			setup: func(t *testing.T, g *gate, _ []*lease, clk *budgettest.Clock) {
				g.pauseUntil("a", clk.Now().Add(time.Minute))
			},
			admitted: "nnyy",
			leasable: map[string]bool{"a": false, "b": true},
		},
		{
			name: "with acks in order a source on hold holds up no other", concurrency: "1",
			leases: []string{"a", "b"},
			setup: func(t *testing.T, g *gate, _ []*lease, _ *budgettest.Clock) {
				g.refuse("a", "403", "sources.a.upload_write_key")
			},
			admitted: "ny",
		},
		{
			name: "with acks in order a batch in its backoff is overtaken by another source's, not its own", concurrency: "1",
			leases: []string{"a", "a", "b"},
			setup: func(t *testing.T, g *gate, ls []*lease, _ *budgettest.Clock) {
				g.setWaiting(ls[0], true)
			},
			admitted: "-ny",
		},
		{
			name: "with acks in order one batch of an endpoint is sent at a time", concurrency: "1",
			leases:   []string{"a", "b", "eu"},
			admitted: "yny",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := budgettest.New(time.Unix(0, 0))
			g := newGate(UploadConfig{Concurrency: tt.concurrency, MaxConcurrency: 32}, 0, clk, testPace,
				func(s string) string { return endpoints[s] })
			var ls []*lease
			for _, s := range tt.leases {
				ls = append(ls, addOf(g, s))
			}
			if tt.setup != nil {
				tt.setup(t, g, ls, clk)
			}
			for i, c := range tt.admitted {
				if c == '-' {
					continue
				}
				if v, want := g.tryBegin(ls[i].seq), c == 'y'; v.admitted != want {
					t.Errorf("lease %d (source %s): admitted %v, want %v (%+v)", i, tt.leases[i], v.admitted, want, v)
				}
			}
			for s, want := range tt.leasable {
				if got := g.room(s); got != want {
					t.Errorf("room for source %s: %v, want %v", s, got, want)
				}
			}
			for s, want := range tt.paused {
				if got := g.sourceStatus(s).reason; got != want {
					t.Errorf("source %s paused for %q, want %q", s, got, want)
				}
			}
		})
	}
}

// A success of one source ends its own pause on refused credentials, not another's; a
// probe after a reload probes every paused source.
func TestGate_Sources_RefusedCredentialsResumeAndProbePerSource(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: "4"}, 0, clk, testPace, nil)
	a, b := addOf(g, "a"), addOf(g, "b")
	g.refuse("a", "401", "sources.a.upload_write_key")
	g.refuse("b", "403", "sources.b.upload_write_key")
	if _, was := g.resumeAuth("a"); !was {
		t.Fatal("a's hold not found")
	}
	if st := g.authStats("b"); !st.Paused || st.Code != "403" {
		t.Fatalf("b after a resumed: %+v; want still paused on its 403", st)
	}
	if v := g.tryBegin(a.seq); !v.admitted {
		t.Fatalf("a after it resumed: %+v; want admitted", v)
	}
	if v := g.tryBegin(b.seq); v.admitted || v.pause != authProbeInterval {
		t.Fatalf("b: %+v; want its head waiting for its probe", v)
	}
	if !g.probeNow() {
		t.Fatal("probeNow found no paused source")
	}
	if v := g.tryBegin(b.seq); !v.admitted {
		t.Fatalf("b after probeNow: %+v; want it to probe at once", v)
	}
}

// The limit of an endpoint learns from the answers of its own sources only: back-pressure
// from one endpoint lowers its limit and leaves the other's.
func TestGate_Sources_EachEndpointHasItsOwnLimit(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	endpoints := map[string]string{"a": "us", "eu": "eu"}
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, clk, testPace,
		func(s string) string { return endpoints[s] })
	g.autoLocked("us").limit = 16
	g.autoLocked("eu").limit = 16
	l := addOf(g, "eu")
	for range 16 {
		addOf(g, "eu")
	}
	if !g.tryBegin(l.seq).admitted {
		t.Fatal("not admitted")
	}
	g.finish(l.seq, &delivery.Outcome{Class: delivery.ClassRetryable, BackPressure: true}, time.Millisecond)
	if eu, us := g.autoLocked("eu").Limit(), g.autoLocked("us").Limit(); eu != 8 || us != 16 {
		t.Fatalf("limits after back-pressure from eu: eu %d, us %d; want 8 and 16", eu, us)
	}
}

// Once the worker stops, a source on a Retry-After is no longer leased ahead of the hold's
// end: Close waits for no hold, and a batch leased then would only be left queued.
func TestGate_ARetryAfterIsNotLeasedAheadOnceTheWorkerStops(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: "4"}, 0, clk, testPace, nil)
	addOf(g, "a")
	g.pauseUntil("a", clk.Now().Add(30*time.Second))
	if ok, _ := g.leasable("a", false); !ok {
		t.Fatal("a running worker does not lease a held source ahead of its hold's end")
	}
	ok, until := g.leasable("a", true)
	if ok || !until.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("stopping: leasable %v until %v; want false until the hold's end", ok, until)
	}
}
