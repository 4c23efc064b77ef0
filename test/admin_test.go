package test_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// rawAdmin sends one request to a running agent with the given headers and returns the status
// and body.
func rawAdmin(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestAdmin_TokenGuardsAdminRoutesAndTheCLISendsIt(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{"OUTBOX_BATCH_INTERVAL": "1h",
		"OUTBOX_INGEST_WRITE_KEYS": "wk-app", "OUTBOX_ADMIN_TOKEN": "adm-e2e"})
	a.waitLog(t, 10*time.Second, "admin=admin_token")
	cwd := t.TempDir()

	// The SDK write key, which apps embed, sends events but opens no admin route.
	code, body := rawAdmin(t, "POST", a.url+"/v1/track", `{"userId":"u","event":"E","email":"x@example.com"}`,
		map[string]string{"Authorization": basicAuth("wk-app"), "Content-Type": "application/json"})
	if code != http.StatusOK {
		t.Fatalf("ingest with the write key: %d %s", code, body)
	}
	for _, path := range []string{"/v1/status", "/v1/dead", "/"} {
		if code, body := rawAdmin(t, "GET", a.url+path, "", map[string]string{"Authorization": basicAuth("wk-app")}); code != http.StatusUnauthorized {
			t.Errorf("GET %s with the write key = %d %s, want 401", path, code, body)
		}
	}
	if code, body := rawAdmin(t, "POST", a.url+"/v1/dead/purge", `{"all":true}`,
		map[string]string{"Authorization": basicAuth("wk-app"), "Content-Type": "application/json"}); code != http.StatusUnauthorized {
		t.Errorf("purge with the write key = %d %s, want 401", code, body)
	}

	// The client commands send admin.token from the environment.
	code, out, stderr := runCLI(t, cwd, map[string]string{"OUTBOX_ADMIN_TOKEN": "adm-e2e"}, "", "status", "--json", "--agent", a.url)
	if code != 0 || !strings.Contains(out, `"events": 1`) {
		t.Fatalf("status with OUTBOX_ADMIN_TOKEN: exit %d, out %q, err %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, cwd, map[string]string{"OUTBOX_ADMIN_TOKEN": "adm-e2e"}, "", "flush", "--wait", "10s", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "queue is empty") {
		t.Fatalf("flush with OUTBOX_ADMIN_TOKEN: exit %d, out %q, err %q", code, out, stderr)
	}
	code, _, stderr = runCLI(t, cwd, map[string]string{"OUTBOX_INGEST_WRITE_KEYS": "wk-app"}, "", "status", "--agent", a.url)
	if code != 1 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "OUTBOX_ADMIN_TOKEN") {
		t.Errorf("status with only the write key: exit %d, err %q; want 1 and the hint to set OUTBOX_ADMIN_TOKEN", code, stderr)
	}
	if strings.Contains(a.stderr.String(), "adm-e2e") {
		t.Errorf("the agent logged the admin token:\n%s", a.stderr.String())
	}
}

func TestAdmin_WithoutTokenRefusesReboundHostsAndCrossSitePurges(t *testing.T) {
	s := sinktest.StartScript(t, "400x1")
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{"OUTBOX_BATCH_INTERVAL": "1h", "OUTBOX_UPLOAD_SPLIT_REJECTED": "false"})
	cwd := t.TempDir()
	if code, body := post(t, a.url+"/v1/track", []byte(`{"userId":"victim","event":"E","email":"victim@example.com"}`), false); code != 200 {
		t.Fatalf("ingest: %d %s", code, body)
	}
	if code, out, stderr := runCLI(t, cwd, nil, "", "flush", "--wait", "10s", "--agent", a.url); code != 0 {
		t.Fatalf("flush: exit %d, out %q, err %q", code, out, stderr)
	}
	port := a.url[strings.LastIndex(a.url, ":")+1:]

	// DNS rebinding: a page on evil.example resolved to 127.0.0.1 reads nothing.
	code, body := rawAdmin(t, "GET", a.url+"/v1/dead", "", map[string]string{"Host": "evil.example:" + port})
	if code != http.StatusForbidden || strings.Contains(body, "victim") {
		t.Fatalf("GET /v1/dead with a rebound Host = %d %s, want 403 and no event data", code, body)
	}
	// A cross-site form post cannot purge: not with text/plain, not with JSON from another origin.
	for _, hdr := range []map[string]string{
		{"Content-Type": "text/plain", "Origin": "http://evil.example"},
		{"Content-Type": "text/plain"},
		{"Content-Type": "application/json", "Origin": "http://evil.example"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
	} {
		if code, body := rawAdmin(t, "POST", a.url+"/v1/dead/purge", `{"all":true}`, hdr); code/100 != 4 {
			t.Errorf("purge with %v = %d %s, want refused", hdr, code, body)
		}
	}
	code, out, stderr := runCLI(t, cwd, nil, "", "dead", "list", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "rejected") {
		t.Fatalf("dead list after the refused purges: exit %d, out %q, err %q; want the dead batch still there", code, out, stderr)
	}
	// The operator's own purge works, is audited and counted as a drop.
	code, out, stderr = runCLI(t, cwd, nil, "", "dead", "purge", "--all", "--agent", a.url)
	if code != 0 {
		t.Fatalf("dead purge --all: exit %d, out %q, err %q", code, out, stderr)
	}
	a.waitLog(t, 10*time.Second, `msg="admin action" action=dead_purge credential=loopback`, "batches=1 events=1")
	code, body = rawAdmin(t, "GET", a.url+"/metrics", "", nil)
	if code != 200 || !strings.Contains(body, `outbox_events_dropped_total{reason="purged"} 1`) {
		t.Errorf("metrics after the purge lack outbox_events_dropped_total{reason=\"purged\"} 1")
	}
}

func TestTokens_InTheConfigFileWithANewlineAreTrimmed(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	cfg := filepath.Join(t.TempDir(), "outbox.yaml")
	// A token pasted with its line end, as `echo tok > file` and templating leave it.
	if err := os.WriteFile(cfg, []byte("ingest:\n  token: \"tok-file\\n\"\nadmin:\n  token: \" adm-file\\n\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := testutil.FreeAddr(t)
	p := start(t, t.TempDir(), agentEnv(t.TempDir(), listen, s.URL()+"/v1/batch", nil), "run", "--config", cfg)
	url := "http://" + listen
	waitHealthy(t, p, url)
	if code, body := rawAdmin(t, "POST", url+"/v1/track", `{"userId":"u","event":"E"}`,
		map[string]string{"Authorization": "Bearer tok-file", "Content-Type": "application/json"}); code != http.StatusOK {
		t.Errorf("ingest with the trimmed ingest.token = %d %s, want 200", code, body)
	}
	if code, body := rawAdmin(t, "GET", url+"/v1/status", "", map[string]string{"Authorization": "Bearer adm-file"}); code != http.StatusOK {
		t.Errorf("status with the trimmed admin.token = %d %s, want 200", code, body)
	}
}

func TestClientCommands_AgainstATLSAgentOverHTTP_SayToPassHTTPSAndTheCA(t *testing.T) {
	ca, certFile, keyFile, _ := serverTLSFiles(t)
	s := sinktest.Start(t, sink.Options{})
	a := startTLSAgent(t, t.TempDir(), s.URL()+"/v1/batch",
		map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile}, ca.Pool(), nil)
	plain := strings.Replace(a.url, "https://", "http://", 1)
	for _, args := range [][]string{{"status"}, {"send", `{"event":"E","userId":"u"}`}, {"dead", "list"}} {
		code, _, stderr := runCLI(t, t.TempDir(), nil, "", append(args, "--agent", plain)...)
		if code != 1 || !strings.Contains(stderr, "--agent https://HOST:PORT") || !strings.Contains(stderr, "--ca-file") {
			t.Errorf("%v over http: exit %d, stderr %q; want 1 and the hint to pass --agent https://HOST:PORT --ca-file", args, code, stderr)
		}
	}
}
