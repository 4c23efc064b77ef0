package test_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

const (
	dashboardFile = "../docs/deploy/grafana-dashboard.json"
	alertsFile    = "../docs/deploy/prometheus-alerts.yaml"
	alertTests    = "../docs/deploy/prometheus-alerts.test.yaml"
)

// exportedMetrics runs an agent, moves one event through it so that every labelled series
// exists, and returns the metric families on its /metrics by name with their types.
func exportedMetrics(t *testing.T) map[string]string {
	t.Helper()
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", nil)
	body, _ := trackBatch("opskit", 1)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	// The attempt is counted once its answer is read, a moment after the sink has the events.
	deadline := time.Now().Add(10 * time.Second)
	for {
		types := scrapeTypes(t, a.url+"/metrics")
		if types["outbox_upload_requests_total"] != "" {
			return types
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape lacks outbox_upload_requests_total after an upload: %v", types)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrapeTypes reads the "# TYPE name kind" lines of a Prometheus text scrape.
func scrapeTypes(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	types := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	return types
}

// promqlMetrics returns the metric names a PromQL expression reads: identifiers outside
// strings, label matchers, ranges and grouping clauses that are not function calls,
// keywords or Grafana variables.
func promqlMetrics(expr string) []string {
	for _, re := range []string{`"(?:[^"\\]|\\.)*"`, `\{[^}]*\}`, `\[[^\]]*\]`,
		`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`, `\$\w+`} {
		expr = regexp.MustCompile(re).ReplaceAllString(expr, " ")
	}
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
	var out []string
	for _, m := range regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`).FindAllStringSubmatch(expr, -1) {
		name := strings.TrimRight(strings.TrimSuffix(strings.TrimSpace(m[0]), "("), " ")
		if m[1] != "" || keywords[strings.ToLower(name)] {
			continue
		}
		out = append(out, name)
	}
	return out
}

// checkExprMetrics fails for each metric expr reads that the agent does not export. extra
// names are allowed too (Prometheus' own up).
func checkExprMetrics(t *testing.T, where, expr string, exported map[string]string, extra ...string) {
	t.Helper()
	names := promqlMetrics(expr)
	if len(names) == 0 {
		t.Errorf("%s: expr %q reads no metric", where, expr)
	}
	for _, n := range names {
		if exported[n] != "" || contains(extra, n) {
			continue
		}
		base := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(n, "")
		if exported[base] == "histogram" {
			continue
		}
		t.Errorf("%s: expr %q reads %s, which the agent does not export", where, expr, n)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// grafanaPanel is the part of a dashboard panel the test checks.
type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ X, Y, W, H int } `json:"gridPos"`
	Repeat  string                    `json:"repeat"` // a templating variable: one panel per value
	Targets []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

func TestOpsKit_GrafanaDashboard_ParsesAndReadsOnlyExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Schema     int            `json:"schemaVersion"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	if dash.Title == "" || dash.UID == "" || dash.Schema == 0 || len(dash.Panels) == 0 {
		t.Fatalf("dashboard lacks title, uid, schemaVersion or panels")
	}
	hasDS := false
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
		if v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		t.Fatal(`dashboard has no "datasource" variable of type datasource over prometheus`)
	}

	exported := exportedMetrics(t)
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		where := "panel " + p.Title
		if ids[p.ID] || p.Title == "" || p.GridPos == nil {
			t.Errorf("%s (id %d): duplicate id, empty title or no gridPos", where, p.ID)
		}
		ids[p.ID] = true
		if p.Repeat != "" && !vars[p.Repeat] {
			t.Errorf("%s is repeated over $%s, which the dashboard does not define", where, p.Repeat)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("%s: want the ${datasource} variable as data source and at least one query", where)
		}
		for _, q := range p.Targets {
			if q.Datasource == nil || q.Datasource.UID != "${datasource}" || q.RefID == "" {
				t.Errorf("%s: query %q must use ${datasource} and have a refId", where, q.Expr)
			}
			checkExprMetrics(t, where, q.Expr, exported)
		}
	}
	for _, m := range []string{"outbox_queue_events", "outbox_queue_oldest_age_seconds", "outbox_events_enqueued_total",
		"outbox_events_uploaded_total", "outbox_upload_requests_total", "outbox_retries_total", "outbox_dead_events",
		"outbox_events_dropped_total", "outbox_store_commit_duration_seconds_bucket",
		"outbox_source_queue_events", "outbox_source_last_upload_success_timestamp_seconds"} {
		if !strings.Contains(string(raw), m) {
			t.Errorf("dashboard does not chart %s", m)
		}
	}
}

func TestOpsKit_AlertRules_EachSaysWhatToDoAndReadsOnlyExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s is not valid YAML: %v", alertsFile, err)
	}
	exported := exportedMetrics(t)
	seen := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			if s := r.Annotations["summary"]; len(s) < 40 || !strings.Contains(s, ":") {
				t.Errorf("alert %s: summary %q should say what happened and, after a colon, what to do", r.Alert, s)
			}
			checkExprMetrics(t, "alert "+r.Alert, r.Expr, exported, "up")
		}
	}
	for _, a := range []string{"OutboxAgentDown", "OutboxCollectorStalled", "OutboxDeadLettersGrowing", "OutboxQueueNearFull", "OutboxEventsDropped",
		"OutboxCredentialsRefused", "OutboxSourceFull", "OutboxMostEventsSuppressed", "OutboxDeadLettersPurged"} {
		if !seen[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

func TestOpsKit_AlertRules_PassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testutil.MissingTool(t, "promtool not on PATH (apt-get install prometheus): the alert rules are not checked by promtool")
	}
	out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", alertsFile, err, out)
	}
	// The rules' unit tests: when each fires and clears, and what it says.
	out, err = exec.Command(promtool, "test", "rules", alertTests).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", alertTests, err, out)
	}
}

func TestRun_ServesTheStatusPageAndPprofOnRequest(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	pprofAddr := testutil.FreeAddr(t)
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"OUTBOX_DEBUG_PPROF_LISTEN": pprofAddr})
	for _, c := range []struct{ url, want string }{
		{a.url + "/", "<title>outbox agent</title>"},
		{"http://" + pprofAddr + "/debug/pprof/", "goroutine"},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), c.want) {
			t.Errorf("GET %s = %d, want 200 with %q", c.url, resp.StatusCode, c.want)
		}
	}
	code, _, stderr := runCLI(t, t.TempDir(), nil, "", "run", "--data-dir", t.TempDir(), "--pprof", "0.0.0.0:0")
	if code != 2 || !strings.Contains(stderr, "debug.pprof_listen (from flag --pprof)") || !strings.Contains(stderr, "not a loopback address") {
		t.Errorf("run --pprof 0.0.0.0:0: exit %d, stderr %q; want 2 naming the key and why", code, stderr)
	}
}

func TestPromqlMetrics_FindsTheMetricNamesOfAnExpression(t *testing.T) {
	cases := []struct {
		name, expr string
		want       []string
	}{
		{"functions, grouping and ranges are not metrics",
			`histogram_quantile(0.5, sum by (le) (rate(x_bucket{instance=~"$instance"}[$__rate_interval])))`, []string{"x_bucket"}},
		{"both sides of a binary operator are metrics, keywords are not",
			`(time() - a_seconds) > 900 and b_events > 0`, []string{"a_seconds", "b_events"}},
		{"label values and strings are not metrics", `up{job="outbox", code!~"2.."} == 0`, []string{"up"}},
		{"a ratio names both metrics", `sum by (instance) (rate(c_total{code!~"2.."}[5m])) / sum(rate(c_total[5m]))`, []string{"c_total", "c_total"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := promqlMetrics(tc.expr); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("promqlMetrics(%q) = %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}
