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
