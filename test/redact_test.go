package test_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
)

func TestCollectorURLSecrets_NeverReachConfigTheStartupLineOrUploadWarnings(t *testing.T) {
	// A collector address nothing listens on: every upload fails with a network error, whose
	// text (net/http's) quotes the request URL.
	endpoint := "http://wk-user:pw-secret@" + testutil.FreeAddr(t) + "/v1/batch?api_key=key-secret&region=eu"
	env := map[string]string{"OUTBOX_UPLOAD_ENDPOINT": endpoint}
	code, out, stderr := runCLI(t, t.TempDir(), env, "", "config")
	if code != 0 || !strings.Contains(out, "api_key=REDACTED") || !strings.Contains(out, "REDACTED@127.0.0.1:") {
		t.Fatalf("outbox config: exit %d, out:\n%s\nerr: %s; want the endpoint with its userinfo and query values redacted", code, out, stderr)
	}
	a := startAgent(t, t.TempDir(), endpoint, map[string]string{"OUTBOX_RETRY_BACKOFF_BASE": "10ms"})
	if code, body := post(t, a.url+"/v1/track", []byte(`{"userId":"u","event":"E"}`), false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, body)
	}
	a.waitLog(t, 10*time.Second, "connection refused")
	for _, secret := range []string{"pw-secret", "key-secret", "wk-user"} {
		if strings.Contains(out, secret) {
			t.Errorf("outbox config shows %q:\n%s", secret, out)
		}
		if strings.Contains(a.stderr.String(), secret) {
			t.Errorf("the agent logged %q:\n%s", secret, a.stderr.String())
		}
	}
	if !strings.Contains(a.stderr.String(), "api_key=REDACTED") {
		t.Errorf("the upload failure does not name the endpoint (redacted):\n%s", a.stderr.String())
	}
}
