package test_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// The samples in docs/deploy must give the agent more time to stop than its shutdown deadline
// (shutdown.timeout + 1 s, with the default shutdown.timeout of config.example.yaml).
func TestDeploySamples_StopTimeoutsExceedTheShutdownDeadline(t *testing.T) {
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^shutdown:\n\s+timeout:\s*(\S+)`).FindSubmatch(example)
	if m == nil {
		t.Fatal("config.example.yaml has no shutdown.timeout")
	}
	timeout, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	deadline := timeout + time.Second
	cases := []struct {
		name, file, pattern string
	}{
		{"systemd TimeoutStopSec", "../docs/deploy/outbox.service", `(?m)^TimeoutStopSec=(\d+)s?$`},
		{"Kubernetes sidecar terminationGracePeriodSeconds", "../docs/deploy/kubernetes/sidecar.yaml", `terminationGracePeriodSeconds:\s*(\d+)`},
		{"Kubernetes DaemonSet terminationGracePeriodSeconds", "../docs/deploy/kubernetes/daemonset.yaml", `terminationGracePeriodSeconds:\s*(\d+)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(tc.pattern).FindSubmatch(b)
			if m == nil {
				t.Fatalf("%s does not set it", tc.file)
			}
			secs, _ := strconv.Atoi(string(m[1]))
			if got := time.Duration(secs) * time.Second; got <= deadline {
				t.Errorf("%s gives %s, want more than shutdown.timeout + 1s = %s", tc.file, got, deadline)
			}
		})
	}
}
