package test_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// waitDead polls the agent's status until it holds n dead batches.
func waitDead(t *testing.T, url string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st struct{ Dead struct{ Batches int64 } }
		resp, err := http.Get(url + "/v1/status")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Dead.Batches == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent never had %d dead batches (has %d)", n, st.Dead.Batches)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var ksuidRE = regexp.MustCompile(`[0-9A-Za-z]{27}`)

func TestDeadCommands_ThroughAgentAndOffline(t *testing.T) {
	s := sinktest.StartScript(t, "404,200,404") // 404 is final: the batch is dead-lettered
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", nil)
	cwd := t.TempDir()
	env := map[string]string{"OUTBOX_DATA_DIR": dir}

	body, ids := trackBatch("dead1", 3)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	waitDead(t, a.url, 1)

	code, out, stderr := runCLI(t, cwd, env, "", "dead", "list", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "404") {
		t.Fatalf("dead list: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	id := ksuidRE.FindString(strings.SplitN(out, "\n", 2)[1])
	code, out, _ = runCLI(t, cwd, env, "", "dead", "show", id, "--agent", a.url)
	if code != 0 || !strings.Contains(out, ids[0]) || !strings.Contains(out, "status:    404") {
		t.Fatalf("dead show %s: exit %d, out:\n%s", id, code, out)
	}
	code, out, _ = runCLI(t, cwd, env, "", "dead", "replay", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "3 event(s)") {
		t.Fatalf("dead replay: exit %d, out %q", code, out)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 3); err != nil {
		t.Fatalf("replayed events never arrived: %v", err)
	}

	body, _ = trackBatch("dead2", 2)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	waitDead(t, a.url, 1)
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}

	// Offline, on the stopped agent's data directory.
	steps := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"inspect shows the dead letter", []string{"inspect", "--data-dir", dir}, 0, "1 batches, 2 events"},
		{"dead list offline", []string{"dead", "list", "--data-dir", dir}, 0, "404"},
		{"purge without IDs or --all is a usage error", []string{"dead", "purge", "--data-dir", dir}, 2, ""},
		{"purge --all", []string{"dead", "purge", "--all", "--data-dir", dir}, 0, "purged 1 dead batch(es)"},
		{"dead list is then empty", []string{"dead", "list", "--data-dir", dir}, 0, "no dead letters"},
		{"compact", []string{"compact", "--data-dir", dir}, 0, "compacted"},
		{"recover leaves a healthy file alone", []string{"recover", "--data-dir", dir}, 0, "nothing to recover"},
		{"recover --force moves it aside all the same", []string{"recover", "--force", "--data-dir", dir}, 0, ".corrupt-"},
		{"a missing data directory is a runtime error", []string{"inspect", "--data-dir", dir + "/nope"}, 1, ""},
	}
	for _, st := range steps {
		code, out, stderr := runCLI(t, cwd, nil, "", st.args...)
		if code != st.code || !strings.Contains(out, st.want) {
			t.Errorf("%s: outbox %v = exit %d, out %q, err %q; want exit %d and %q", st.name, st.args, code, out, stderr, st.code, st.want)
		}
	}
}

// deadLine returns the line of `outbox dead list` output out that lists id, "" when none does.
func deadLine(out, id string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, id) {
			return l
		}
	}
	return ""
}

// Two sources' batches die for different reasons; the filters pick each through the agent and
// offline, a replay keeps the events' messageIds and counts itself when the batch dies again,
// and a bad filter changes nothing.
func TestDeadCommands_FiltersThroughAgentAndOffline(t *testing.T) {
	s := sinktest.StartScript(t, "404,500,404") // then 200s; a 404 is final
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_SOURCES_SHOP_WRITE_KEYS": "wk-shop", "OUTBOX_SOURCES_SHOP_UPLOAD_WRITE_KEY": "wk-shop",
		"OUTBOX_SOURCES_BLOG_WRITE_KEYS": "wk-blog", "OUTBOX_SOURCES_BLOG_UPLOAD_WRITE_KEY": "wk-blog",
		"OUTBOX_RETRY_MAX_RETRIES": "0", // a 500 spends the budget at once
	})
	cwd := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, cwd, map[string]string{}, "", append(args, "--agent", a.url)...)
	}
	shopBody, shopIDs := trackBatch("shop", 3)
	if code, resp := postKey(t, a.url+"/v1/batch", "wk-shop", shopBody); code != http.StatusOK {
		t.Fatalf("ingest shop: %d %s", code, resp)
	}
	waitDead(t, a.url, 1) // 404: rejected
	blogBody, _ := trackBatch("blog", 2)
	if code, resp := postKey(t, a.url+"/v1/batch", "wk-blog", blogBody); code != http.StatusOK {
		t.Fatalf("ingest blog: %d %s", code, resp)
	}
	waitDead(t, a.url, 2) // 500, no retry left: budget_spent

	code, out, stderr := cli("dead", "list")
	if code != 0 || !strings.Contains(out, "SOURCE") || !strings.Contains(out, "REPLAYS") {
		t.Fatalf("dead list: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	ids := ksuidRE.FindAllString(out, -1)
	if len(ids) != 2 {
		t.Fatalf("dead list shows %d ids, want 2:\n%s", len(ids), out)
	}
	shopID, blogID := ids[0], ids[1]
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tt := range []struct {
		name    string
		filters []string
		want    []string // ids listed
	}{
		{"--source picks a source's batches", []string{"--source", "shop"}, []string{shopID}},
		{"--status picks the last answer", []string{"--status", "500"}, []string{blogID}},
		{"--reason picks the reason", []string{"--reason", "rejected"}, []string{shopID}},
		{"--since a duration ago holds both", []string{"--since", "10m"}, []string{shopID, blogID}},
		{"--since an RFC 3339 time to come holds none", []string{"--since", future}, nil},
		{"filters combine", []string{"--source", "blog", "--reason", "budget_spent", "--until", future}, []string{blogID}},
	} {
		code, out, stderr := cli(append([]string{"dead", "list"}, tt.filters...)...)
		got := ksuidRE.FindAllString(out, -1)
		if code != 0 || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: dead list %v = exit %d, ids %v, want %v:\n%s%s", tt.name, tt.filters, code, got, tt.want, out, stderr)
		}
		if len(tt.want) == 0 && !strings.Contains(out, "no dead letters match the filters") {
			t.Errorf("%s: dead list %v says %q", tt.name, tt.filters, out)
		}
	}
	if l := deadLine(out, blogID); !strings.Contains(l, "blog") || !strings.Contains(l, "budget_spent") || !strings.Contains(l, "500") {
		t.Errorf("blog's line lacks its source, reason or status: %q", l)
	}
	code, out, _ = cli("dead", "show", "--reason", "rejected")
	if code != 0 || !strings.Contains(out, "id:        "+shopID) || !strings.Contains(out, shopIDs[2]) || strings.Contains(out, blogID) {
		t.Fatalf("dead show --reason rejected: exit %d, out:\n%s", code, out)
	}

	// A bad filter is a usage error and changes nothing.
	code, _, stderr = cli("dead", "purge", "--reason", "rejeted")
	if code != 2 || !strings.Contains(stderr, `--reason "rejeted": not a dead-letter reason; use one of rejected, too_large, budget_spent`) {
		t.Fatalf("purge --reason rejeted: exit %d, err %q; want exit 2 naming the flag and the reasons", code, stderr)
	}
	waitDead(t, a.url, 2)

	// Replayed, the shop batch is refused again: it dies with one replay counted.
	code, out, stderr = cli("dead", "replay", "--source", "shop", "--reason", "rejected")
	if code != 0 || !strings.Contains(out, "1 batch(es): 3 event(s)") {
		t.Fatalf("dead replay --source shop: exit %d, out %q, err %q", code, out, stderr)
	}
	if err := s.WaitRequests(ctxFor(t, 10*time.Second), 3); err != nil {
		t.Fatal(err)
	}
	waitDead(t, a.url, 2)
	code, out, _ = cli("dead", "list", "--source", "shop")
	again := ksuidRE.FindString(out)
	if l := deadLine(out, again); code != 0 || again == "" || again == shopID || !strings.HasSuffix(strings.TrimSpace(l), " 1") {
		t.Fatalf("the shop batch dead again: exit %d; want a new id whose REPLAYS is 1:\n%s", code, out)
	}
	code, out, _ = cli("dead", "show", again)
	if code != 0 || !strings.Contains(out, "replays:   1") {
		t.Fatalf("dead show %s: exit %d, out:\n%s", again, code, out)
	}
	// Replayed once more, the collector takes it: every event arrives once, its messageId kept.
	if code, out, stderr = cli("dead", "replay", "--status", "404"); code != 0 || !strings.Contains(out, "3 event(s)") {
		t.Fatalf("dead replay --status 404: exit %d, out %q, err %q", code, out, stderr)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 3); err != nil {
		t.Fatalf("replayed events never arrived: %v", err)
	}
	for _, id := range shopIDs {
		if n := s.Deliveries(id); n != 1 {
			t.Errorf("event %s delivered %d times, want once with its messageId", id, n)
		}
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}

	// Offline, on the stopped agent's data directory.
	for _, st := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"list --status offline", []string{"dead", "list", "--status", "500"}, 0, blogID},
		{"a bad time offline is a usage error", []string{"dead", "list", "--until", "soon"}, 2, ""},
		{"purge by a filter that matches nothing", []string{"dead", "purge", "--source", "shop"}, 0, "purged 0 dead batch(es), 0 event(s)"},
		{"purge by filters", []string{"dead", "purge", "--source", "blog", "--since", "1h"}, 0, "purged 1 dead batch(es), 2 event(s)"},
		{"the list is then empty", []string{"dead", "list"}, 0, "no dead letters"},
	} {
		code, out, stderr := runCLI(t, cwd, nil, "", append(st.args, "--data-dir", dir)...)
		if code != st.code || !strings.Contains(out, st.want) {
			t.Errorf("%s: outbox %v = exit %d, out %q, err %q; want exit %d and %q", st.name, st.args, code, out, stderr, st.code, st.want)
		}
	}
}
