package config

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestChanges_Sources_AddedRemovedAndChangedNamesAreLive(t *testing.T) {
	old := Default()
	old.Sources.Named = map[string]*uploader.SourceConfig{
		"keep":  {UploadWriteKey: "k"},
		"rekey": {UploadWriteKey: "old", WriteKeys: []string{"in-r"}},
		"gone":  {UploadWriteKey: "g"},
	}
	next := Default()
	next.Sources.Named = map[string]*uploader.SourceConfig{
		"keep":  {UploadWriteKey: "k"},
		"rekey": {UploadWriteKey: "new", WriteKeys: []string{"in-r"}},
		"added": {Endpoint: "https://eu.example/v1/batch"},
	}
	next.Sources.Relay = true
	live, restart := changes(&old, &next)
	for _, k := range []string{"sources.added.endpoint", "sources.added.write_keys", "sources.gone.upload_write_key", "sources.gone.max_bytes", "sources.rekey.upload_write_key"} {
		if !slices.Contains(live, k) {
			t.Errorf("live changes %v lack %s", live, k)
		}
	}
	for _, k := range live {
		if strings.HasPrefix(k, "sources.keep.") || k == "sources.rekey.write_keys" {
			t.Errorf("unchanged key %s reported as changed", k)
		}
	}
	if want := []string{"sources.relay"}; !slices.Equal(restart, want) {
		t.Errorf("restart changes %v, want %v", restart, want)
	}

	got := withKeys(old, &next, live)
	if _, ok := got.Sources.Named["gone"]; ok {
		t.Error("a removed source is still configured")
	}
	if got.Sources.Named["rekey"].UploadWriteKey != "new" || got.Sources.Named["added"].Endpoint != "https://eu.example/v1/batch" || got.Sources.Relay {
		t.Errorf("withKeys took %+v", got.Sources)
	}
	if old.Sources.Named["rekey"].UploadWriteKey != "old" || old.Sources.Named["gone"] == nil || len(old.Sources.Named) != 3 {
		t.Errorf("withKeys changed the configuration it copied: %+v", old.Sources.Named)
	}
}

// reloadRig is a Reloader over a real client and agent whose configuration file the test
// rewrites; the client uploads to a loopback sink.
type reloadRig struct {
	t      *testing.T
	file   string
	base   string // the file's lines besides the sources section
	client *uploader.Client
	rl     *Reloader
	logs   *bytes.Buffer
}

func newReloadRig(t *testing.T, sources string) *reloadRig {
	t.Helper()
	col := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	r := &reloadRig{t: t, file: filepath.Join(dir, "outbox.yaml"), logs: &bytes.Buffer{},
		base: "data_dir: " + filepath.Join(dir, "data") + "\nupload:\n  endpoint: " + col.URL() + "/v1/batch\n  write_key: wk-default\nqueue:\n  sync: none\n"}
	r.write(sources)
	lc, err := r.load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	r.client, err = segment.Open(lc.Config.UploaderConfig(), uploader.WithLogger(log))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ag, err := agent.New(lc.Config.AgentConfig(log), r.client, nil)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ag.Shutdown(ctx)
	})
	r.rl = NewReloader(r.load, lc.Config, lc.Config, log, new(slog.LevelVar), r.client, ag)
	return r
}

func (r *reloadRig) write(sources string) {
	r.t.Helper()
	if err := os.WriteFile(r.file, []byte(r.base+sources), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *reloadRig) load() (*Loaded, error) { return Load(Input{File: r.file}) }

func (r *reloadRig) sourceNames() []string {
	var out []string
	for _, s := range r.client.Stats().Sources {
		out = append(out, s.Name)
	}
	return out
}

func TestReloader_Sources_AppliesAddAndRemove_RefusesABadSectionWhole(t *testing.T) {
	r := newReloadRig(t, "sources:\n  app-a:\n    write_keys: [in-a]\n    upload_write_key: up-a\n")
	r.write("sources:\n  app-b:\n    write_keys: [in-b]\n    upload_write_key: up-b\n")
	res := r.rl.Reload()
	if res.Result != agent.ReloadApplied || !slices.Contains(res.Applied, "sources.app-b.upload_write_key") || !slices.Contains(res.Applied, "sources.app-a.write_keys") {
		t.Fatalf("reload adding app-b and removing app-a: %+v", res)
	}
	if got := r.sourceNames(); !slices.Equal(got, []string{"app-b", "default"}) {
		t.Fatalf("sources after the reload %v, want app-b and default", got)
	}
	if r.rl.Current().Sources.Named["app-a"] != nil {
		t.Fatal("the configuration in use still has app-a")
	}

	r.write("sources:\n  app-b:\n    write_keys: [in-b]\n    upload_write_key: up-b\n  app-c:\n    endpoint: ftp://x\n    upload_write_key: up-c\n")
	res = r.rl.Reload()
	if res.Result != agent.ReloadRejected || !strings.Contains(res.Message, "sources.app-c.endpoint") {
		t.Fatalf("reload with a bad endpoint: %+v, want rejected naming sources.app-c.endpoint", res)
	}
	if got := r.sourceNames(); !slices.Equal(got, []string{"app-b", "default"}) {
		t.Fatalf("sources after a rejected reload %v, want them unchanged", got)
	}
	for _, secret := range []string{"in-a", "up-a", "in-b", "up-b", "up-c"} {
		if strings.Contains(r.logs.String(), secret) || strings.Contains(res.Message, secret) {
			t.Fatalf("a write key (%s) reached the log or the reload's message:\n%s", secret, r.logs.String())
		}
	}
	if !strings.Contains(r.logs.String(), "sources reconfigured") || !strings.Contains(r.logs.String(), "app-a") {
		t.Fatalf("the log does not name the sources changed:\n%s", r.logs.String())
	}
}
