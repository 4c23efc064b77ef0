package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
)

// fakeAgent answers /healthz and /readyz like an agent; it records the paths asked.
func fakeAgent(t *testing.T, healthz, readyz int, readyBody string) (url string, paths func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(healthz)
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/readyz":
			w.WriteHeader(readyz)
			_, _ = w.Write([]byte(readyBody))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestHealth_ExitsZeroOnlyWhenTheAgentAnswers200(t *testing.T) {
	refused := "http://" + testutil.FreeAddr(t)
	cases := []struct {
		name     string
		healthz  int
		readyz   int
		body     string
		ready    bool
		agentURL string // "" means the fake agent
		wantPath string
		wantCode int
		wants    []string
	}{
		{name: "liveness asks /healthz and passes on 200", healthz: 200, readyz: 503, body: `{"ready":false,"reason":"shutting down"}`,
			wantPath: "GET /healthz", wantCode: exitOK, wants: []string{"healthy"}},
		{name: "readiness asks /readyz and passes on 200", healthz: 200, readyz: 200, body: `{"ready":true}`, ready: true,
			wantPath: "GET /readyz", wantCode: exitOK, wants: []string{"ready"}},
		{name: "readiness fails on 503 and gives the agent's reason", healthz: 200, readyz: 503, body: `{"ready":false,"reason":"queue is full"}`, ready: true,
			wantPath: "GET /readyz", wantCode: exitRuntime, wants: []string{"not ready", "queue is full", "503"}},
		{name: "liveness fails on any other status", healthz: 500, readyz: 200,
			wantPath: "GET /healthz", wantCode: exitRuntime, wants: []string{"not healthy", "500"}},
		{name: "an agent that is not there fails with how to fix it", agentURL: refused,
			wantCode: exitRuntime, wants: []string{"not healthy", "connection refused", "outbox run"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, paths := fakeAgent(t, tc.healthz, tc.readyz, tc.body)
			if tc.agentURL != "" {
				url = tc.agentURL
			}
			args := []string{"health", "--agent", url}
			if tc.ready {
				args = append(args, "--ready")
			}
			var out bytes.Buffer
			cmd := NewRootCommand(Deps{Stdout: &out})
			cmd.SetArgs(args)
			err := cmd.Execute()
			if code := exitCode(err); code != tc.wantCode {
				t.Fatalf("exit code %d (err %v), want %d", code, err, tc.wantCode)
			}
			text := out.String()
			if err != nil {
				text = err.Error()
			}
			for _, w := range tc.wants {
				if !strings.Contains(text, w) {
					t.Errorf("%q does not say %q", text, w)
				}
			}
			if tc.wantPath != "" {
				if got := paths(); len(got) != 1 || got[0] != tc.wantPath {
					t.Errorf("asked %v, want [%s]", got, tc.wantPath)
				}
			}
		})
	}
}

func TestHealth_DefaultAgent_IsIngestListenWithWildcardAsLoopback(t *testing.T) {
	url, paths := fakeAgent(t, 200, 200, `{"ready":true}`)
	port := url[strings.LastIndex(url, ":"):]
	env := []string{"OUTBOX_INGEST_LISTEN=0.0.0.0" + port, "OUTBOX_INGEST_TOKEN=probe-test-token"}
	var out bytes.Buffer
	cmd := NewRootCommand(Deps{Stdout: &out, Environ: env})
	cmd.SetArgs([]string{"health", "--ready"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := paths(); len(got) != 1 || got[0] != "GET /readyz" {
		t.Errorf("asked %v, want [GET /readyz] on 127.0.0.1%s", got, port)
	}
}
