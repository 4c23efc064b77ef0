package test_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// kubernetesServiceEnv is what Kubernetes injects into every pod of a namespace that has a
// Service named outbox on port 8089.
var kubernetesServiceEnv = map[string]string{
	"OUTBOX_PORT":                  "tcp://10.0.0.1:8089",
	"OUTBOX_SERVICE_HOST":          "10.0.0.1",
	"OUTBOX_SERVICE_PORT":          "8089",
	"OUTBOX_SERVICE_PORT_INGEST":   "8089",
	"OUTBOX_PORT_8089_TCP":         "tcp://10.0.0.1:8089",
	"OUTBOX_PORT_8089_TCP_PROTO":   "tcp",
	"OUTBOX_PORT_8089_TCP_PORT":    "8089",
	"OUTBOX_PORT_8089_TCP_ADDR":    "10.0.0.1",
	"OUTBOX_UPLOAD_WRTIE_KEY":      "wk-typo-secret",
	"OUTBOX_SRC":                   "/home/op/src/outbox",
	"OUTBOX_SERVICE_PORT_METRICS_": "9090",
}

func TestRun_UnknownOutboxVariables_StartAndWarnOnceNamingTheNearestKey(t *testing.T) {
	s := sinktest.StartScript(t, "ok")
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", kubernetesServiceEnv)
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	logs := a.stderr.String()
	for name := range kubernetesServiceEnv {
		line := "level=WARN msg=\"environment variable is not a configuration key; ignored\" variable=" + name
		if n := strings.Count(logs, line+" ") + strings.Count(logs, line+"\n"); n != 1 {
			t.Errorf("%s warned %d times, want once:\n%s", name, n, logs)
		}
	}
	if !strings.Contains(logs, "variable=OUTBOX_UPLOAD_WRTIE_KEY did_you_mean=OUTBOX_UPLOAD_WRITE_KEY") {
		t.Errorf("the misspelt key's warning does not name OUTBOX_UPLOAD_WRITE_KEY:\n%s", logs)
	}
	if strings.Contains(logs, "did_you_mean") && strings.Count(logs, "did_you_mean") != 1 {
		t.Errorf("a Kubernetes service variable was given a nearest key:\n%s", logs)
	}
	for _, value := range []string{"wk-typo-secret", "10.0.0.1", "/home/op/src"} {
		if strings.Contains(logs, value) {
			t.Errorf("the log holds the value %q of an unknown variable:\n%s", value, logs)
		}
	}
}
