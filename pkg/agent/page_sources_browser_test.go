package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// sourcesTable is the Sources table as the page shows it.
type sourcesTable struct {
	Refreshes int                          `json:"refreshes"`
	Shown     bool                         `json:"shown"`
	Head      []string                     `json:"head"`
	Rows      map[string]map[string]string `json:"rows"` // cell text by source, then by column title
	Values    map[string]int               `json:"values"`
}

const readSources = `(() => {
  const head = [...document.querySelectorAll("#sources-head th")].map((th) => th.textContent);
  const rows = {};
  for (const tr of document.querySelectorAll("#sources tr")) {
    const cells = {};
    [...tr.children].forEach((td, i) => { cells[head[i]] = td.textContent; });
    rows[tr.dataset.source] = cells;
  }
  const values = {};
  for (const e of document.querySelectorAll("#sources [data-value]")) values[e.id] = Number(e.dataset.value);
  return {
    refreshes: Number(document.body.dataset.refreshes || 0),
    shown: !document.getElementById("sources-section").hidden,
    head, rows, values,
  };
})()`

// TestPage_InABrowser_ListsEachSource runs an agent with two named sources besides the default
// one: app-a delivered and queued again, app-b's one batch dead-lettered and more queued. The
// page lists each source with the numbers of /v1/status; the columns of fields the agent does
// not send are left out, and once the rows carry a pause and batches in flight they are shown.
func TestPage_InABrowser_ListsEachSource(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		testutil.MissingTool(t, "no chromium on PATH (set CHROMIUM, or apt-get install chromium): the status page is not checked in a browser")
	}
	h := start(t, setup{
		agent:  agent.Config{Sources: agent.SourcesConfig{Keys: map[string]string{"wk-a": "app-a", "wk-b": "app-b"}}},
		faults: "200,400:body=event 0: invalid userId",
		upload: func(c *uploader.Config) {
			c.Upload.SplitRejected = false // app-b's whole batch is dead-lettered
			c.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {WriteKeys: []string{"wk-a"}}, "app-b": {WriteKeys: []string{"wk-b"}}}
		},
	})
	send := func(key string, n int) {
		t.Helper()
		events := make([]string, n)
		for i := range events {
			events[i] = fmt.Sprintf(`{"type":"track","userId":"u%d","event":"From %s"}`, i, key)
		}
		if r := h.do(req{path: "/v1/batch", body: []byte(`{"batch":[` + strings.Join(events, ",") + `]}`), writeKey: key}); r.code != http.StatusOK {
			t.Fatalf("ingest with %s: %d %s", key, r.code, r.body)
		}
	}
	send("wk-a", 4)
	h.flush() // 200: app-a delivered
	send("wk-b", 3)
	h.flush() // 400: app-b's batch dead-lettered
	send("wk-a", 5)
	send("wk-b", 2) // both queued: batch.interval is an hour

	var raw struct{ Sources []map[string]any }
	h.get("/v1/status").json(t, &raw)
	st := h.status()
	if len(st.Sources) != 3 {
		t.Fatalf("/v1/status sources %+v, want default, app-a and app-b", st.Sources)
	}
	row := map[string]agent.SourceStatus{}
	for _, s := range st.Sources {
		row[s.Name] = s
	}
	if a, b := row["app-a"], row["app-b"]; a.Events != 5 || a.LastSuccess == nil || b.Events != 2 || b.DeadEvents != 3 || b.DeadBatches != 1 {
		t.Fatalf("traffic did not end with app-a delivered and 5 queued, app-b 2 queued and 3 dead: %+v", st.Sources)
	}

	bctx, events := startBrowser(t, browser)
	if _, err := chromedp.Run(bctx, chromedp.Navigate(h.url+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	waitPage(t, bctx, "Number(document.body.dataset.refreshes || 0) >= 1")
	first, err := chromedp.Run(bctx, chromedp.Evaluate[sourcesTable](readSources))
	if err != nil {
		t.Fatal(err)
	}
	if !first.Shown || len(first.Rows) != 3 {
		t.Fatalf("Sources table shown %v with rows %v, want one row per source", first.Shown, first.Rows)
	}
	for _, s := range st.Sources {
		for field, want := range map[string]int64{"events": s.Events, "bytes": s.Bytes, "dead_events": s.DeadEvents} {
			id := "source-" + s.Name + "-" + field
			if got, ok := first.Values[id]; !ok || int64(got) != want {
				t.Errorf("page #%s = %d (shown: %v), want %d as in /v1/status", id, got, ok, want)
			}
		}
	}
	if got := first.Rows["app-b"]["dead events"]; got != "3 in 1 batch" {
		t.Errorf("app-b's dead events %q, want \"3 in 1 batch\"", got)
	}
	if got, want := first.Rows["app-a"]["last success"], row["app-a"].LastSuccess.UTC().Format("15:04:05"); got != want {
		t.Errorf("app-a's last success %q, want %s", got, want)
	}
	if got := first.Rows["app-b"]["last success"]; got != "–" {
		t.Errorf("app-b's last success %q, want – (nothing delivered)", got)
	}
	// A column is shown when the agent's rows carry its field, and only then.
	for field, title := range map[string]string{"paused": "delivery", "in_flight": "in flight"} {
		_, sent := raw.Sources[0][field]
		if shown := strings.Contains(strings.Join(first.Head, "|"), title); shown != sent {
			t.Errorf("column %q shown: %v, but /v1/status rows carry %s: %v (head %q)", title, shown, field, sent, first.Head)
		}
	}

	// The rows carry a pause and batches in flight: the page shows both without a reload. The
	// agent's answer is extended in the page, so that the test does not wait for a real pause.
	until := time.Now().Add(30 * time.Second).UTC()
	patch := fmt.Sprintf(`(() => {
  const real = window.fetch;
  window.fetch = async (path, opts) => {
    const r = await real(path, opts);
    if (!String(path).startsWith("/v1/status")) return r;
    const st = await r.json();
    for (const s of st.sources || []) {
      Object.assign(s, s.name === "app-b"
        ? { paused: true, paused_reason: "rate_limited", paused_until: %q, in_flight: 0 }
        : { paused: false, in_flight: s.name === "app-a" ? 2 : 0 });
    }
    return new Response(JSON.stringify(st), { status: r.status, headers: r.headers });
  };
})()`, until.Format(time.RFC3339))
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[any](patch)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, fmt.Sprintf("Number(document.body.dataset.refreshes || 0) >= %d && !!document.getElementById('source-app-a-in_flight')", first.Refreshes+1))
	later, err := chromedp.Run(bctx, chromedp.Evaluate[sourcesTable](readSources))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := later.Rows["app-b"]["delivery"], "paused: rate_limited until "+until.Format("15:04:05"); got != want {
		t.Errorf("app-b's delivery %q, want %q", got, want)
	}
	if got := later.Rows["app-a"]["delivery"]; got != "delivering" {
		t.Errorf("app-a's delivery %q, want delivering", got)
	}
	if later.Values["source-app-a-in_flight"] != 2 || later.Rows["app-a"]["in flight"] != "2" {
		t.Errorf("app-a in flight %q (value %d), want 2", later.Rows["app-a"]["in flight"], later.Values["source-app-a-in_flight"])
	}
	for _, e := range events.list() {
		t.Errorf("browser: %s", e)
	}
}
