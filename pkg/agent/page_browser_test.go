package agent_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

var updateScreenshot = flag.Bool("update", false, "rewrite docs/status-page.png from the browser test")

// findChromium returns the browser to drive: $CHROMIUM, else the first of the usual names on
// PATH; "" when there is none.
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageState is what the test reads off the rendered page.
type pageState struct {
	Refreshes   int            `json:"refreshes"`
	Marker      bool           `json:"marker"`
	Values      map[string]int `json:"values"`
	Retry       string         `json:"retry"`
	LastResult  string         `json:"lastResult"`
	Points      map[string]int `json:"points"`
	ResultRows  int            `json:"resultRows"`
	DeadReasons []string       `json:"deadReasons"`
	Banner      string         `json:"banner"`
	AuthBanner  string         `json:"authBanner"`
	Reload      string         `json:"reload"` // the Configuration card's result and note
	Lasts       map[string]int `json:"lasts"`  // each chart series' last value, by column
	YTicks      []string       `json:"yticks"` // every chart's y-axis labels
}

const readPage = `(() => {
  const values = {};
  for (const e of document.querySelectorAll("[data-value]")) values[e.id] = Number(e.dataset.value);
  const points = {};
  const lasts = {};
  for (const p of document.querySelectorAll("polyline[data-series]")) {
    points[p.dataset.series] = Number(p.dataset.points);
    lasts[p.dataset.series] = Number(p.dataset.last);
  }
  return {
    refreshes: Number(document.body.dataset.refreshes || 0),
    marker: window.testMarker === true,
    values,
    retry: document.getElementById("retry-state").textContent,
    lastResult: document.getElementById("last-result").textContent,
    points,
    resultRows: document.querySelectorAll("#results tr").length,
    deadReasons: [...document.querySelectorAll("#dead tr")].map((tr) => tr.children.length > 2 ? tr.children[2].textContent : ""),
    banner: document.getElementById("banner").style.display === "block" ? document.getElementById("banner").textContent : "",
    authBanner: document.getElementById("auth-banner").style.display === "block" ? document.getElementById("auth-banner").textContent : "",
    reload: document.getElementById("reload-result").textContent + ": " + document.getElementById("reload-message").textContent,
    lasts,
    yticks: [...document.querySelectorAll("text.ytick")].map((e) => e.textContent),
  };
})()`

// TestPage_InABrowser_ChartsTheTrafficAndMatchesStatus runs traffic through an agent to a
// loopback sink (accepted, then one batch rejected, then rate-limited), opens the status page
// in headless Chromium and checks what it shows against /v1/status and /v1/samples. The
// sampler runs on a fake clock, so two minutes of history take no real time.
func TestPage_InABrowser_ChartsTheTrafficAndMatchesStatus(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		testutil.MissingTool(t, "no chromium on PATH (set CHROMIUM, or apt-get install chromium): the status page is not checked in a browser")
	}
	const accepted, steps, maxRequestBytes = 100, 130, 64 << 10
	bad, tooLarge := int64(0), int64(0)
	// The fake clock ends near the real one, so the sampled seconds and the upload times on
	// the page agree.
	clock := budgettest.New(time.Now().Add(-steps * time.Second).Truncate(time.Second))
	h := start(t, setup{
		agent:  agent.Config{Clock: clock, QueueMaxBytes: 256 << 10, MaxRequestBytes: maxRequestBytes},
		faults: fmt.Sprintf("200x%d,400:body=event 0: invalid userId,429:ra=300:default", accepted),
		upload: func(c *uploader.Config) { c.Upload.SplitRejected = false }, // the whole batch is dead-lettered
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range steps {
		if err := clock.BlockUntil(ctx, 1); err != nil {
			t.Fatalf("sampler never waited: %v", err)
		}
		n := 3 + (i*7)%11 + i/20
		events := make([]string, n)
		for k := range events {
			events[k] = fmt.Sprintf(`{"type":"track","userId":"user-%d","event":"Step %d"}`, k, i)
		}
		if r := h.post("/v1/batch", `{"batch":[`+strings.Join(events, ",")+`]}`); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		// Refusals an SDK gets: a bad event (400) now and then, a body over the limit (413) twice.
		if i%10 == 3 {
			if r := h.post("/v1/track", `{"type":"track","event":"No user"}`); r.code != http.StatusBadRequest {
				t.Fatalf("a bad event: %d %s, want 400", r.code, r.body)
			}
			bad++
		}
		if i == 40 || i == 90 {
			big := `{"type":"track","userId":"u","event":"Big","properties":{"pad":"` + strings.Repeat("x", maxRequestBytes) + `"}}`
			if r := h.post("/v1/track", big); r.code != http.StatusRequestEntityTooLarge {
				t.Fatalf("a body over the limit: %d, want 413", r.code)
			}
			tooLarge++
		}
		h.flush()
		clock.Advance(time.Second)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}

	h.agent.RecordReload(agent.Reload{Result: agent.ReloadPartial, Message: "data_dir changed; a restart is needed.",
		Applied: []string{"log.level"}, Restart: []string{"data_dir"}})

	bctx, events := startBrowser(t, browser)
	if _, err := chromedp.Run(bctx, chromedp.Navigate(h.url+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	first := waitPage(t, bctx, "Number(document.body.dataset.refreshes || 0) >= 1")

	st := h.status()
	var s agent.PageSamples
	h.get("/v1/samples").json(t, &s)
	checkNumbers(t, first, st)
	if st.Retry.Path != "rate_limit" || st.Retry.WaitingUntil == nil || st.Dead.Batches != 1 || st.Queue.Events == 0 {
		t.Fatalf("traffic did not end rate-limited with a dead letter and a queue: %+v", st)
	}
	until := st.Retry.WaitingUntil.UTC().Format("15:04:05")
	if want := "waiting for Retry-After until "; !strings.Contains(first.Retry, want) || !strings.Contains(first.Retry, until) ||
		!strings.HasSuffix(first.Retry, fmt.Sprintf("attempt %d", st.Retry.Attempt)) {
		t.Errorf("retry state %q, want %q%s, attempt %d", first.Retry, want, until, st.Retry.Attempt)
	}
	if first.LastResult != st.Upload.LastResult {
		t.Errorf("last result %q, want %q", first.LastResult, st.Upload.LastResult)
	}
	if len(s.T) != steps {
		t.Errorf("%d samples, want %d", len(s.T), steps)
	}
	// Every charted column the agent samples has a point per sample; one it does not sample
	// (pending_events until the client's stats carry it) is not drawn.
	for _, name := range []string{"queue_events", "pending_events", "enqueued", "uploaded", "errors", "attempts", "in_flight", "concurrency_limit",
		"refused_400", "refused_413", "refused_503"} {
		_, sampled := s.Series[name]
		points, drawn := first.Points[name]
		switch {
		case !sampled && name != "pending_events":
			t.Errorf("/v1/samples lacks column %s", name)
		case sampled && points != len(s.T):
			t.Errorf("chart series %s has %d points, want one per sample (%d)", name, points, len(s.T))
		case !sampled && drawn:
			t.Errorf("chart series %s is drawn although the agent samples no such column", name)
		}
	}
	sum := func(col string) (n int64) {
		for _, v := range s.Series[col] {
			n += v
		}
		return n
	}
	if sum("refused_400") != bad || sum("refused_413") != tooLarge || sum("refused_503") != 0 {
		t.Errorf("refusals charted: 400 × %d, 413 × %d, 503 × %d; want %d, %d, 0", sum("refused_400"), sum("refused_413"), sum("refused_503"), bad, tooLarge)
	}
	wholeNumber := regexp.MustCompile(`^[0-9][0-9,]*$`)
	if len(first.YTicks) != 3*5 {
		t.Errorf("%d y-axis labels, want 3 on each of the 5 charts: %q", len(first.YTicks), first.YTicks)
	}
	for _, l := range first.YTicks {
		if !wholeNumber.MatchString(l) {
			t.Errorf("a chart of counts is labelled %q: axes of whole numbers show whole numbers (labels %q)", l, first.YTicks)
		}
	}
	// One source: the Queue card shows the chart's last sample.
	if first.Values["queue-events"] != first.Lasts["queue_events"] {
		t.Errorf("Queue card %d events, queue chart ends at %d", first.Values["queue-events"], first.Lasts["queue_events"])
	}
	if want := "partial: data_dir changed; a restart is needed. Restart to apply: data_dir."; first.Reload != want {
		t.Errorf("configuration card %q, want %q", first.Reload, want)
	}
	if first.ResultRows == 0 {
		t.Error("no last results shown")
	}
	if len(first.DeadReasons) != 1 || !strings.HasPrefix(first.DeadReasons[0], "rejected") {
		t.Errorf("dead-letter reasons %q, want one, rejected", first.DeadReasons)
	}

	// More traffic and one more sample: the page catches up without a reload (the marker
	// set on the first load survives).
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[any]("window.testMarker = true")); err != nil {
		t.Fatal(err)
	}
	// An event the sampler has not seen yet (the clock has not moved): /v1/status counts it, the
	// card and the chart both still show the last sample, and agree.
	if r := h.post("/v1/track", `{"type":"track","userId":"u","event":"Unsampled"}`); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	between := waitPage(t, bctx, fmt.Sprintf("Number(document.body.dataset.refreshes || 0) >= %d", first.Refreshes+2))
	if n := h.status().Queue.Events; n != int64(first.Lasts["queue_events"])+1 {
		t.Fatalf("/v1/status has %d events, want the sampled %d plus the one posted", n, first.Lasts["queue_events"])
	}
	if between.Values["queue-events"] != between.Lasts["queue_events"] || between.Lasts["queue_events"] != first.Lasts["queue_events"] {
		t.Errorf("between samples: Queue card %d, chart %d, want both the last sample's %d",
			between.Values["queue-events"], between.Lasts["queue_events"], first.Lasts["queue_events"])
	}
	if r := h.post("/v1/track", `{"type":"track","userId":"late","event":"Late"}`); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	clock.Advance(time.Second)
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	st = h.status()
	later := waitPage(t, bctx, fmt.Sprintf(
		"document.querySelector('polyline[data-series=queue_events]')?.dataset.points == %d && document.getElementById('queue-events').dataset.value == %d",
		steps+1, st.Queue.Events))
	if !later.Marker || later.Refreshes <= first.Refreshes {
		t.Errorf("page reloaded or did not refresh: marker %v, refreshes %d then %d", later.Marker, first.Refreshes, later.Refreshes)
	}
	checkNumbers(t, later, st)
	if later.Values["queue-events"] != later.Lasts["queue_events"] {
		t.Errorf("Queue card %d events, queue chart ends at %d", later.Values["queue-events"], later.Lasts["queue_events"])
	}

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	saveScreenshot(t, shot)
	for _, e := range events.list() {
		t.Errorf("browser: %s", e)
	}
}

// TestPage_InABrowser_SaysWhyDeliveryIsPausedOnRefusedCredentials opens the status page of an
// agent whose collector answers 401: a banner says delivery is paused and what to fix, and the
// retry card says the credentials are refused.
func TestPage_InABrowser_SaysWhyDeliveryIsPausedOnRefusedCredentials(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		testutil.MissingTool(t, "no chromium on PATH (set CHROMIUM, or apt-get install chromium): the status page is not checked in a browser")
	}
	h := start(t, setup{faults: "401:default"})
	if r := h.post("/v1/track", `{"type":"track","userId":"u","event":"Refused"}`); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	if fr := h.flush(); fr.Done {
		t.Fatalf("flush = %+v, want delivery paused with the event queued", fr)
	}
	bctx, events := startBrowser(t, browser)
	if _, err := chromedp.Run(bctx, chromedp.Navigate(h.url+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	// The Queue card shows the sampler's last second: wait for the sample that holds the event.
	ps := waitPage(t, bctx, "Number(document.body.dataset.refreshes || 0) >= 1 && document.getElementById('queue-events').dataset.value == 1")
	if !strings.Contains(ps.AuthBanner, "refuses our credentials (401): fix upload.write_key and reload") {
		t.Errorf("auth banner %q, want it to say the collector refuses our credentials and what to fix", ps.AuthBanner)
	}
	if !strings.Contains(ps.Retry, "credentials refused (401)") {
		t.Errorf("retry state %q, want it to say the credentials are refused", ps.Retry)
	}
	checkNumbers(t, ps, h.status())
	for _, e := range events.list() {
		t.Errorf("browser: %s", e)
	}
}

// checkNumbers compares the page's numbers with /v1/status.
func checkNumbers(t *testing.T, ps pageState, st agent.Status) {
	t.Helper()
	if ps.Banner != "" {
		t.Errorf("page shows an error: %s", ps.Banner)
	}
	want := map[string]int64{
		"queue-events": st.Queue.Events, "queue-bytes": st.Queue.Bytes,
		"dead-events": st.Dead.Events, "dead-batches": st.Dead.Batches, "dead-bytes": st.Dead.Bytes,
		"store-bytes": st.Store.FileBytes,
	}
	for id, w := range want {
		if got, ok := ps.Values[id]; !ok || int64(got) != w {
			t.Errorf("page #%s = %d (shown: %v), want %d as in /v1/status", id, got, ok, w)
		}
	}
}

// waitPage waits until cond holds on the page, then reads it.
func waitPage(t *testing.T, bctx context.Context, cond string) pageState {
	t.Helper()
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		ps, _ := chromedp.Run(bctx, chromedp.Evaluate[pageState](readPage))
		t.Fatalf("page never reached %s: %v; page: %+v", cond, err, ps)
	}
	ps, err := chromedp.Run(bctx, chromedp.Evaluate[pageState](readPage))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	return ps
}

// browserEvents collects what the browser reports that a clean page never causes: script
// errors, console errors, refused loads (a Content-Security-Policy violation among them) and
// requests that leave loopback.
type browserEvents struct {
	mu   sync.Mutex
	errs []string
}

func (b *browserEvents) add(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, fmt.Sprintf(format, args...))
}

func (b *browserEvents) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// startBrowser starts headless Chromium with the flags that work on a machine without a
// network, and a fresh profile, plus extra (flags such as a host resolver rule); it stops with
// the test.
func startBrowser(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) (context.Context, *browserEvents) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
		chromedp.Env("TZ=UTC"), // the page shows local times; the test compares them in UTC
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ev := &browserEvents{}
	listen := func(e any) {
		switch e := e.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			ev.add("script error at line %d: %s %s", d.LineNumber, d.Text, desc)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				ev.add("console error: %v", e.Args)
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				ev.add("log error: %s %s", e.Entry.Text, e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, "http://127.0.0.1:") && !strings.HasPrefix(u, "data:") {
				ev.add("request outside loopback: %s", u)
			}
		}
	}
	bctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(listen))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil { // start the browser without a timeout
		t.Fatalf("starting %s: %v", path, err)
	}
	return bctx, ev
}

// saveScreenshot writes the screenshot as a test artifact ($OUTBOX_ARTIFACTS, else the
// system temp dir) and, with -update, as docs/status-page.png.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	dir := os.Getenv("OUTBOX_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "outbox-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "status-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if *updateScreenshot {
		if err := os.WriteFile("../../docs/status-page.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
