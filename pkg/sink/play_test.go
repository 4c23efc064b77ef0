package sink_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// statuses posts n batches and returns the statuses (0 for a transport error).
func statuses(t *testing.T, url string, n int) []int {
	t.Helper()
	var out []int
	for range n {
		r, err := post(t.Context(), newClient(false), url+"/v1/batch", body("x"), nil)
		if err != nil {
			out = append(out, 0)
			continue
		}
		out = append(out, r.status)
	}
	return out
}

func TestScript_StepsArePlayedInOrderThenDefault(t *testing.T) {
	s := sinktest.StartScript(t, "503x2,429:ra=1,500,201,401:default")
	got := statuses(t, s.URL(), 7)
	want := []int{503, 503, 429, 500, 201, 401, 401}
	if !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	reqs := s.Requests()
	if reqs[2].Response.RetryAfter != "1" || reqs[4].Outcome != sink.OutcomeAccepted || reqs[5].Outcome != sink.OutcomeRejected {
		t.Errorf("records %+v", reqs)
	}
	if err := s.SetScript(sink.Script{Steps: []sink.Response{{Status: 502}}}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, s.URL(), 2); !slices.Equal(got, []int{502, 200}) {
		t.Errorf("after SetScript: %v, want [502 200]", got)
	}
	if err := s.SetScript(sink.Script{Chances: []sink.Chance{{P: 2}}}); !errors.Is(err, sink.ErrBadFaultSpec) {
		t.Errorf("SetScript with P=2: %v, want ErrBadFaultSpec", err)
	}
}

func TestScript_ChancesFollowTheSeed(t *testing.T) {
	const n = 400
	play := func(seed uint64) []int {
		s := sinktest.Start(t, sink.Options{Script: sink.Script{Seed: seed, Chances: []sink.Chance{
			{P: 0.20, Response: sink.Response{Status: 503}},
			{P: 0.05, Response: sink.Response{Status: 429, RetryAfter: "1"}},
		}}})
		c := newClient(false)
		var out []int
		for range n {
			r, err := post(t.Context(), c, s.URL()+"/v1/batch", body("x"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.status == 429 && r.header.Get("Retry-After") != "1" {
				t.Fatalf("429 without its Retry-After: %v", r.header)
			}
			out = append(out, r.status)
		}
		return out
	}
	a, b, c := play(42), play(42), play(43)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed played different sequences")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds played the same sequence")
	}
	count := map[int]int{}
	for _, st := range a {
		count[st]++
	}
	// 400 draws: 80 expected 503s (sd 8), 20 expected 429s (sd 4.4); the seed makes it exact.
	if count[503] < 50 || count[503] > 110 || count[429] < 5 || count[429] > 40 || count[200]+count[503]+count[429] != n {
		t.Errorf("counts %v for 20%% 503 / 5%% 429 over %d draws", count, n)
	}
}

func TestResponse_RetryAfterAndHeadersPassThrough(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := sinktest.Start(t, sink.Options{Now: func() time.Time { return now }, Script: sink.Script{Steps: []sink.Response{
		{Status: 429, RetryAfter: "7"},
		{Status: 503, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"},
		{Status: 503, RetryAfterIn: 30 * time.Second},
		{Status: 529, RetryAfter: "garbage", Body: "slow down", Header: http.Header{"X-Extra": {"1"}}},
		{Status: 308, Location: "/v1/import"},
	}}})
	want := []struct {
		status              int
		retryAfter, body, x string
	}{
		{429, "7", `{"error":"Too Many Requests"}`, ""},
		{503, "Wed, 21 Oct 2015 07:28:00 GMT", "", ""},
		{503, "Wed, 02 Jan 2030 03:04:35 GMT", "", ""},
		{529, "garbage", "slow down", "1"},
	}
	for i, w := range want {
		r := mustPost(t, s.URL()+"/v1/batch", body("a"), nil)
		if r.status != w.status || r.header.Get("Retry-After") != w.retryAfter || r.header.Get("X-Extra") != w.x {
			t.Errorf("response %d: %d Retry-After %q X-Extra %q, want %d %q %q", i, r.status,
				r.header.Get("Retry-After"), r.header.Get("X-Extra"), w.status, w.retryAfter, w.x)
		}
		if w.body != "" && r.body != w.body {
			t.Errorf("response %d body %q, want %q", i, r.body, w.body)
		}
	}
	r := mustPost(t, s.URL()+"/v1/batch", body("a"), nil)
	if r.status != 308 || r.header.Get("Location") != "/v1/import" {
		t.Errorf("redirect: %d Location %q", r.status, r.header.Get("Location"))
	}
	if got := s.Requests()[2].Response.RetryAfter; got != "Wed, 02 Jan 2030 03:04:35 GMT" {
		t.Errorf("recorded Retry-After %q, want the rendered date", got)
	}
}

func TestResponse_RedirectIsFollowedByAClientWithTheBody(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	if err := s.SetScript(sink.Script{Steps: []sink.Response{{Status: 307, Location: s.URL() + "/v1/import?hop=1"}}}); err != nil {
		t.Fatal(err)
	}
	r, err := post(t.Context(), newClient(true), s.URL()+"/v1/batch", body("a", "b"), nil)
	if err != nil || r.status != 200 {
		t.Fatalf("got %v %v, want 200 after following", r, err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].Method != "POST" || reqs[1].Path != "/v1/import" || reqs[1].Query != "hop=1" || reqs[1].EventCount != 2 {
		t.Fatalf("records %+v, want the POST repeated with its body at the Location", reqs)
	}
}

func TestResponse_ResetIsATransportErrorForARealClient(t *testing.T) {
	for _, tc := range []struct {
		name       string
		reset      sink.Reset
		wantEvents int
	}{
		{"reset before the body is read records no events", sink.ResetBeforeBody, 0},
		{"reset after the body is read records the events but accepts nothing", sink.ResetAfterBody, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sinktest.Start(t, sink.Options{Script: sink.Script{Steps: []sink.Response{{Status: 200, Reset: tc.reset}}}})
			_, err := post(t.Context(), newClient(false), s.URL()+"/v1/batch", gzipped(t, body("a", "b", "c")),
				map[string]string{"Content-Encoding": "gzip"})
			if err == nil {
				t.Fatal("client got a response, want a transport error")
			}
			if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "EOF") {
				t.Errorf("error %v, want a connection reset", err)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].Outcome != sink.OutcomeReset || reqs[0].EventCount != tc.wantEvents {
				t.Fatalf("records %+v", reqs)
			}
			if st := s.Stats(); st.Resets != 1 || st.Batches != 0 || st.Events != 0 {
				t.Errorf("stats %+v, want one reset and nothing accepted", st)
			}
			if got := statuses(t, s.URL(), 1); got[0] != 200 {
				t.Errorf("next request %v, want 200", got)
			}
		})
	}
}

func TestResponse_DelayGoesThroughTheInjectedSleep(t *testing.T) {
	var slept []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d) // requests are sequential in this test
		return nil
	}
	s := sinktest.Start(t, sink.Options{Sleep: sleep, Script: sink.Script{Steps: []sink.Response{{Status: 202, Delay: time.Hour}}}})
	if got := statuses(t, s.URL(), 1); got[0] != 202 {
		t.Fatalf("status %v, want 202 after the delay", got)
	}
	if len(slept) != 1 || slept[0] != time.Hour {
		t.Errorf("slept %v, want [1h]", slept)
	}
	if st := s.Stats(); st.Batches != 1 {
		t.Errorf("stats %+v, want the delayed batch accepted", st)
	}
}

func TestResponse_HangAndDelayEndWhenTheClientGivesUp(t *testing.T) {
	for _, resp := range []sink.Response{{Hang: true}, {Delay: time.Hour}} {
		t.Run("hang="+strconv.FormatBool(resp.Hang), func(t *testing.T) {
			s := sinktest.Start(t, sink.Options{Script: sink.Script{Steps: []sink.Response{resp}}})
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() {
				_, err := post(ctx, newClient(false), s.URL()+"/v1/batch", body("a"), nil)
				errc <- err
			}()
			if err := s.WaitRequests(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if got := s.Requests()[0].Outcome; got != sink.OutcomePending {
				t.Errorf("outcome while hanging %q, want pending", got)
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("client error %v, want context.Canceled", err)
			}
			if err := s.Wait(t.Context(), func(st sink.Stats) bool { return st.Canceled == 1 }); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Batches != 0 {
				t.Errorf("stats %+v, want nothing accepted", st)
			}
		})
	}
}

func TestResponse_HangEndsWhenTheSinkCloses(t *testing.T) {
	s := sinktest.StartScript(t, "hang")
	errc := make(chan error, 1)
	go func() {
		_, err := post(context.Background(), newClient(false), s.URL()+"/v1/batch", body("a"), nil)
		errc <- err
	}()
	if err := s.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("client got a response from a hanging sink, want a transport error")
	}
}

func TestRespond_OverridesTheScriptWithTheDecodedBatch(t *testing.T) {
	bad := func(req sink.Request, scripted sink.Response) sink.Response {
		for _, ev := range req.Events {
			if strings.Contains(string(ev), `"messageId":"bad"`) {
				return sink.Response{Status: 400, Body: `{"error":"bad event"}`}
			}
		}
		return scripted
	}
	s := sinktest.Start(t, sink.Options{Respond: bad, Script: sink.Script{Steps: []sink.Response{{Status: 503}}}})
	for _, tc := range []struct {
		name   string
		ids    []string
		status int
	}{
		{"the hook can keep the scripted answer", []string{"a"}, 503},
		{"a batch with the marked event is refused", []string{"b", "bad", "c"}, 400},
		{"a clean batch is accepted", []string{"b", "c"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := mustPost(t, s.URL()+"/v1/batch", body(tc.ids...), nil); r.status != tc.status {
				t.Errorf("status %d, want %d", r.status, tc.status)
			}
		})
	}
	if st := s.Stats(); st.Unique != 2 || st.Rejected != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestRequest_RetryCountReadsTheHeader(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	for _, h := range []map[string]string{nil, {"X-Retry-Count": "1"}, {"X-Retry-Count": "x"}} {
		mustPost(t, s.URL()+"/v1/batch", body("a"), h)
	}
	type rc struct {
		n  int
		ok bool
	}
	var got []rc
	for _, r := range s.Requests() {
		n, ok := r.RetryCount()
		got = append(got, rc{n, ok})
	}
	want := []rc{{0, false}, {1, true}, {-1, true}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d RetryCount = %+v, want %+v", i, got[i], want[i])
		}
	}
}
