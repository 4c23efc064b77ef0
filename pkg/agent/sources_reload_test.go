package agent_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// reloadSources applies a reload of sources.<name>.* as the running binary does: the client
// first (it must know a source before a key selects it), then the agent's key mapping.
func (h *harness) reloadSources(named map[string]*uploader.SourceConfig, keys map[string]string) {
	h.t.Helper()
	cfg := h.clientConfig
	cfg.Sources.Named = named
	if err := h.client.Reconfigure(cfg); err != nil {
		h.t.Fatalf("client Reconfigure: %v", err)
	}
	if err := h.agent.Reconfigure(agent.Config{Sources: agent.SourcesConfig{Keys: keys}}); err != nil {
		h.t.Fatalf("agent Reconfigure: %v", err)
	}
}

// sourceStatus returns the status row of source name.
func (h *harness) sourceStatus(name string) (agent.SourceStatus, bool) {
	for _, s := range h.status().Sources {
		if s.Name == name {
			return s, true
		}
	}
	return agent.SourceStatus{}, false
}

// uploadKeysOf returns the upload key of every accepted request carrying events of app.
func (h *harness) uploadKeysOf(app string) (keys map[string]int) {
	keys = map[string]int{}
	for _, r := range h.sink.Accepted() {
		for _, e := range r.Events {
			if strings.Contains(string(e), `"event":"`+app+`"`) {
				keys[basicKey(h.t, r.Header.Get("Authorization"))]++
			}
		}
	}
	return keys
}

func TestAgent_Reload_AddsReKeysAndRemovesSources_ARemovedOneDrainsWithItsLastKey(t *testing.T) {
	before := map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "up-a"}, "app-b": {UploadWriteKey: "up-b"}}
	h := start(t, setup{
		agent:  agent.Config{Sources: agent.SourcesConfig{Keys: map[string]string{"wk-a": "app-a", "wk-b": "app-b"}}},
		upload: func(c *uploader.Config) { c.Sources.Named = before },
	})
	for i := range 3 {
		if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("app-a", i)), writeKey: "wk-a"}); r.code != http.StatusOK {
			t.Fatalf("ingest with wk-a: %d %s", r.code, r.body)
		}
	}
	// app-a removed; app-b re-keyed, upload key and ingest key both; app-c added.
	h.reloadSources(map[string]*uploader.SourceConfig{"app-b": {UploadWriteKey: "up-b2"}, "app-c": {UploadWriteKey: "up-c"}},
		map[string]string{"wk-b2": "app-b", "wk-c": "app-c"})
	for key, app := range map[string]string{"wk-b2": "app-b", "wk-c": "app-c"} {
		if r := h.do(req{path: "/v1/batch", body: []byte(appEvent(app, 0)), writeKey: key}); r.code != http.StatusOK {
			t.Fatalf("ingest with %s after the reload: %d %s", key, r.code, r.body)
		}
	}
	// wk-a and wk-b now are keys no source lists, and other keys are configured: refused.
	for _, key := range []string{"wk-a", "wk-b"} {
		if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("app-a", 9)), writeKey: key}); r.code != http.StatusUnauthorized {
			t.Fatalf("%s, dropped from the sources by the reload: %d, want 401", key, r.code)
		}
	}
	if row, ok := h.sourceStatus("app-a"); !ok || !row.Removed || row.Events != 3 {
		t.Fatalf("app-a in the status after its removal: %+v (listed %v), want removed with 3 events", row, ok)
	}
	h.flush()
	for app, want := range map[string]string{"app-a": "up-a", "app-b": "up-b2", "app-c": "up-c"} {
		keys := h.uploadKeysOf(app)
		if len(keys) != 1 || keys[want] == 0 {
			t.Errorf("%s's events uploaded with keys %v, want only %s", app, keys, want)
		}
	}
	if n := h.uploadKeysOf("app-a")["up-a"]; n != 3 {
		t.Errorf("%d of app-a's 3 queued events delivered after its removal", n)
	}
	if row, ok := h.sourceStatus("app-a"); ok {
		t.Fatalf("app-a still in the status after it drained: %+v", row)
	}
}

func TestAgent_Reload_RemovedSourcesKeyGoesWhereAnUnlistedKeyGoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent agent.Config
		want  int    // the removed key's answer after the reload
		dest  string // the source its events reach
	}{
		{name: "no credentials left: the default source", want: http.StatusOK, dest: "default"},
		{name: "ingest.write_keys lists it: the default source", agent: agent.Config{WriteKeys: []string{"wk-a"}}, want: http.StatusOK, dest: "default"},
		{name: "other credentials only: refused", agent: agent.Config{Token: "tok"}, want: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.agent
			before.Sources.Keys = map[string]string{"wk-a": "app-a"}
			h := start(t, setup{agent: before,
				upload: func(c *uploader.Config) {
					c.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "up-a"}}
				}})
			cfg := h.clientConfig
			cfg.Sources.Named = nil
			if err := h.client.Reconfigure(cfg); err != nil {
				t.Fatal(err)
			}
			if err := h.agent.Reconfigure(tc.agent); err != nil {
				t.Fatal(err)
			}
			r := h.do(req{path: "/v1/batch", body: []byte(appEvent("app-a", 0)), writeKey: "wk-a"})
			if r.code != tc.want {
				t.Fatalf("the removed source's key: %d %s, want %d", r.code, r.body, tc.want)
			}
			if tc.dest == "" {
				return
			}
			for _, row := range h.client.Stats().Sources { // the status lists one source in no rows
				if want := map[bool]int64{true: 1}[row.Name == tc.dest]; row.Events != want {
					t.Fatalf("source %s holds %d events, want %d", row.Name, row.Events, want)
				}
			}
		})
	}
}
