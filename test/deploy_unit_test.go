package test_test

import (
	"os"
	"strings"
	"testing"
)

// unitDirectives reads a systemd unit into directive → values (a directive may repeat).
func unitDirectives(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not Directive=value", path, line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// The unit is Type=notify (the agent speaks sd_notify), hardened, and does not restart on the
// exit codes a restart cannot fix.
func TestSystemdUnit_NotifyHardenedAndNoRestartOnConfigErrorOrDamage(t *testing.T) {
	u := unitDirectives(t, "../docs/deploy/outbox.service")
	want := map[string]string{
		"Type":                     "notify",
		"DynamicUser":              "yes",
		"StateDirectory":           "outbox",
		"ProtectSystem":            "strict",
		"NoNewPrivileges":          "yes",
		"CapabilityBoundingSet":    "",
		"Restart":                  "on-failure",
		"ExecStart":                "/usr/bin/outbox run --config /etc/outbox/config.yaml --data-dir /var/lib/outbox",
		"RestartPreventExitStatus": "2 3",
	}
	for k, v := range want {
		got, ok := u[k]
		if !ok || len(got) != 1 || got[0] != v {
			t.Errorf("%s=%v, want %q", k, got, v)
		}
	}
	if _, ok := u["WatchdogSec"]; !ok {
		t.Error("no WatchdogSec: the agent's watchdog pings would go unused")
	}
}
