package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestRun_Pprof_RefusesAnAddressBeyondLoopback(t *testing.T) {
	cases := []struct {
		name  string
		env   []string
		args  []string
		wants []string
	}{
		{name: "every interface by flag is refused", args: []string{"--pprof", "0.0.0.0:6060"},
			wants: []string{"debug.pprof_listen (from flag --pprof)", `"0.0.0.0:6060" is not a loopback address`, "127.0.0.1"}},
		{name: "an empty host means every interface and is refused", args: []string{"--pprof", ":6060"},
			wants: []string{"debug.pprof_listen", "not a loopback address"}},
		{name: "a LAN address from the environment is refused", env: []string{"OUTBOX_DEBUG_PPROF_LISTEN=192.168.1.5:6060"},
			wants: []string{"debug.pprof_listen (from env OUTBOX_DEBUG_PPROF_LISTEN)", "not a loopback address"}},
		{name: "a host name other than localhost is refused unresolved", args: []string{"--pprof", "example.com:6060"},
			wants: []string{"not a loopback address"}},
		{name: "no port is refused", args: []string{"--pprof", "127.0.0.1"},
			wants: []string{"debug.pprof_listen", "not host:port"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--data-dir", t.TempDir()}, tc.args...)
			err := runRootCanceled(t, tc.env, args...)
			if exitCode(err) != exitUsage {
				t.Fatalf("outbox %v: exit code %d (%v), want %d", args, exitCode(err), err, exitUsage)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestStartPprof_ServesProfilesOnItsOwnMux(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if p, err := startPprof("", nil, log); p != nil || err != nil {
		t.Fatalf("startPprof(\"\") = %v, %v; want off", p, err)
	}
	p, err := startPprof("127.0.0.1:0", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + p.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ = %d, want 200 listing the profiles", code)
	}
	if code, body := get("/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine = %d, want 200 with a goroutine profile", code)
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Errorf("/ = %d, want 404: nothing but the profiles is served", code)
	}
	// DNS rebinding: a page whose own name resolves to 127.0.0.1 reads no profile.
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/debug/pprof/heap", nil)
	req.Host = "evil.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("/debug/pprof/heap with Host evil.example = %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}

	// Taken: a second server on the same address fails with a message naming the key.
	_, err = startPprof(p.addr, nil, log)
	if err == nil || !strings.Contains(err.Error(), "debug.pprof_listen") {
		t.Errorf("second startPprof on %s = %v, want an error naming debug.pprof_listen", p.addr, err)
	}
	p.Close()
	if _, err := http.Get("http://" + p.addr + "/debug/pprof/"); err == nil {
		t.Error("pprof still answers after Close")
	}
	var nilServer *pprofServer
	nilServer.Close() // off: nothing to stop
}
