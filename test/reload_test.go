package test_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	outbox "github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// writeConfig writes settings ("section.key" → YAML value) to path as a YAML file, replacing
// it atomically (a rename, as editors and configuration managers do), so that a reload never
// reads half a file.
func writeConfig(t *testing.T, path string, settings map[string]string) {
	t.Helper()
	sections := map[string][]string{}
	var top []string
	for k, v := range settings {
		sec, key, nested := strings.Cut(k, ".")
		if !nested {
			top = append(top, k+": "+v)
			continue
		}
		sections[sec] = append(sections[sec], "  "+key+": "+v)
	}
	sort.Strings(top)
	var b strings.Builder
	for _, l := range top {
		b.WriteString(l + "\n")
	}
	names := make([]string, 0, len(sections))
	for s := range sections {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		lines := sections[s]
		sort.Strings(lines)
		b.WriteString(s + ":\n" + strings.Join(lines, "\n") + "\n")
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// with returns base with the changes applied.
func with(base map[string]string, changes map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(changes))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

// reloadAgent is an agent configured by a file only (the environment of a running process
// cannot change, so a reload test keeps every key it changes in the file).
type reloadAgent struct {
	*agent
	file, dir, token string
}

// startFileAgent writes settings (plus a data dir, a free listen address, the endpoint and
// an ingest token) to a config file and runs `outbox run --config` on it.
func startFileAgent(t *testing.T, endpoint string, settings map[string]string) (*reloadAgent, map[string]string) {
	t.Helper()
	work := t.TempDir()
	listen := testutil.FreeAddr(t)
	base := with(map[string]string{
		"data_dir":                     filepath.Join(work, "data"),
		"ingest.listen":                listen,
		"ingest.token":                 "tok-load",
		"upload.endpoint":              endpoint,
		"batch.interval":               "50ms",
		"shutdown.timeout":             "2s",
		"retry.backoff_base":           "20ms",
		"retry.backoff_cap":            "200ms",
		"log.level":                    "info",
		"upload.write_key":             "up-old",
		"upload.concurrency":           "2",
		"upload.max_concurrency":       "2",
		"ingest.allow_unauthenticated": "false",
	}, settings)
	file := filepath.Join(work, "outbox.yaml")
	writeConfig(t, file, base)
	p := start(t, work, map[string]string{}, "run", "--config", file)
	a := &agent{proc: p, url: "http://" + listen}
	waitHealthy(t, p, a.url)
	return &reloadAgent{agent: a, file: file, dir: base["data_dir"], token: "tok-load"}, base
}

// call sends one request to the agent with the given Authorization header ("" none).
func (a *reloadAgent) call(t *testing.T, method, path, auth string, body []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func basicAuth(user string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))
}

// status reads /v1/status with the agent's token.
func (a *reloadAgent) status(t *testing.T) outbox.Status {
	t.Helper()
	code, b := a.call(t, http.MethodGet, "/v1/status", "Bearer "+a.token, nil)
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, b)
	}
	var st outbox.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("status is not JSON: %v: %s", err, b)
	}
	return st
}

// waitReload waits until the status shows reload number seq, and returns it.
func (a *reloadAgent) waitReload(t *testing.T, seq int64) *outbox.ReloadStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r := a.status(t).Reload; r != nil && r.Seq >= seq {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status shows no reload %d after 10s; stderr:\n%s", seq, a.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reloadsMetric returns outbox_config_reloads_total{result} as /metrics shows it.
func (a *reloadAgent) reloadsMetric(t *testing.T, result string) string {
	t.Helper()
	code, b := a.call(t, http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	prefix := fmt.Sprintf("outbox_config_reloads_total{result=%q} ", result)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return "absent"
}

func TestRun_SIGHUP_UnderLoad_ChangesWriteKeysBatchSizeAndLogLevelWithoutAFailedRequest(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a, base := startFileAgent(t, s.URL()+"/v1/batch", map[string]string{
		"ingest.write_keys": "[wk-old]",
		"batch.max_events":  "50",
	})

	// Steady load: producers send with the ingest token, which the reload does not touch, so
	// every one of their requests must be answered 200.
	var failures []string
	var mu sync.Mutex
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := trackBatch(fmt.Sprintf("load-g%d-n%d", g, n), 5)
				code, text, err := postAuth(a.url+"/v1/batch", "Bearer "+a.token, body)
				if err != nil || code != http.StatusOK {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%d %s %v", code, text, err))
					mu.Unlock()
					return
				}
				acked.Add(5)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	if err := s.Wait(ctxFor(t, 10*time.Second), func(st sink.Stats) bool { return st.Requests >= 10 }); err != nil {
		t.Fatalf("no uploads before the reload: %v", err)
	}
	if strings.Contains(a.stderr.String(), "level=DEBUG") {
		t.Fatalf("debug lines at log.level info")
	}

	writeConfig(t, a.file, with(base, map[string]string{
		"ingest.write_keys": "[wk-new]",
		"batch.max_events":  "7",
		"upload.write_key":  "up-new",
		"log.level":         "debug",
	}))
	a.signal(t, syscall.SIGHUP)
	a.waitLog(t, 10*time.Second, "configuration reloaded")
	atReload := len(s.Requests())
	r := a.waitReload(t, 1)
	want := []string{"log.level", "ingest.write_keys", "upload.write_key", "batch.max_events"}
	if r.Result != outbox.ReloadApplied || !slices.Equal(r.Applied, want) {
		t.Fatalf("reload = %+v; want applied, with %v", r, want)
	}

	// The old ingest key is refused from now on, the new one accepted.
	one := []byte(`{"type":"track","event":"Key","userId":"u-key"}`)
	if code, b := a.call(t, http.MethodPost, "/v1/track", basicAuth("wk-old"), one); code != http.StatusUnauthorized {
		t.Errorf("old ingest write key after the reload: %d %s, want 401", code, b)
	}
	if code, b := a.call(t, http.MethodPost, "/v1/track", basicAuth("wk-new"), one); code != http.StatusOK {
		t.Errorf("new ingest write key after the reload: %d %s, want 200", code, b)
	} else {
		acked.Add(1)
	}
	a.waitLog(t, 10*time.Second, "level=DEBUG", "request refused")

	if err := s.Wait(ctxFor(t, 10*time.Second), func(st sink.Stats) bool { return st.Requests >= int64(atReload+40) }); err != nil {
		t.Fatalf("uploads stopped after the reload: %v", err)
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if err := s.Wait(ctxFor(t, 15*time.Second), func(st sink.Stats) bool { return st.Unique >= acked.Load() }); err != nil {
		t.Fatalf("the sink holds %d of the %d acknowledged events: %v", s.Stats().Unique, acked.Load(), err)
	}
	if len(failures) > 0 {
		t.Errorf("%d load requests failed across the reload, e.g. %s", len(failures), failures[0])
	}
	// At most upload.concurrency (2) attempts were in flight when the reload was logged: every
	// request the sink got after those carries the new key and at most the new batch.max_events.
	newKey := 0
	for i, rq := range s.Requests() {
		auth := rq.Header.Get("Authorization")
		switch {
		case i >= atReload+2 && (auth != basicAuth("up-new") || rq.EventCount > 7):
			t.Errorf("upload %d (after the reload): %d events, Authorization %q; want at most 7 with up-new", i+1, rq.EventCount, auth)
		case auth == basicAuth("up-new"):
			newKey++
			if rq.EventCount > 7 {
				t.Errorf("upload %d with the new key: %d events, want at most 7", i+1, rq.EventCount)
			}
		case auth != basicAuth("up-old") || rq.EventCount > 50:
			t.Errorf("upload %d (before the reload): %d events, Authorization %q; want at most 50 with up-old", i+1, rq.EventCount, auth)
		}
	}
	t.Logf("%d events acknowledged across the reload, %d uploads (%d with the new key)", acked.Load(), len(s.Requests()), newKey)
	if newKey < 38 {
		t.Errorf("%d uploads carry the new key, want the 38 or more after the reload", newKey)
	}
	if got := a.reloadsMetric(t, outbox.ReloadApplied); got != "1" {
		t.Errorf(`outbox_config_reloads_total{result="applied"} = %s, want 1`, got)
	}
	if strings.Contains(a.stderr.String(), "up-new") || strings.Contains(a.stderr.String(), "wk-new") {
		t.Errorf("a key appears in the log")
	}
}

// postAuth POSTs body to url with the Authorization header auth.
func postAuth(url, auth string, body []byte) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

func TestRun_SIGHUP_InvalidFile_IsRejectedWholeWithTheOutboxConfigMessage(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a, base := startFileAgent(t, s.URL()+"/v1/batch", map[string]string{"batch.max_events": "4"})
	// Two changes, one invalid: neither applies.
	writeConfig(t, a.file, with(base, map[string]string{"upload.write_key": "up-new", "batch.max_events": "0"}))
	code, _, stderr := runCLI(t, t.TempDir(), map[string]string{}, "", "config", "--config", a.file)
	wantMsg := strings.TrimSpace(strings.TrimPrefix(stderr, "outbox: "))
	if code != 2 || !strings.Contains(wantMsg, "batch.max_events") {
		t.Fatalf("outbox config on the invalid file: exit %d, %q; want exit 2 naming batch.max_events", code, stderr)
	}

	a.signal(t, syscall.SIGHUP)
	r := a.waitReload(t, 1)
	if r.Result != outbox.ReloadRejected || r.Message != wantMsg || len(r.Applied) != 0 {
		t.Fatalf("reload = %+v; want rejected with %q, nothing applied", r, wantMsg)
	}
	a.waitLog(t, 5*time.Second, "configuration reload rejected; running on with the previous configuration", "batch.max_events")
	if got := a.reloadsMetric(t, outbox.ReloadRejected); got != "1" {
		t.Errorf(`outbox_config_reloads_total{result="rejected"} = %s, want 1`, got)
	}

	// The agent runs on with the old settings: the old key, batches of 4.
	body, _ := trackBatch("after-rejected", 8)
	if code, text, err := postAuth(a.url+"/v1/batch", "Bearer "+a.token, body); err != nil || code != http.StatusOK {
		t.Fatalf("ingest after the rejected reload: %d %s %v", code, text, err)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 8); err != nil {
		t.Fatal(err)
	}
	for i, rq := range s.Requests() {
		if rq.Header.Get("Authorization") != basicAuth("up-old") || rq.EventCount > 4 {
			t.Errorf("upload %d: %d events with %q; want at most 4 with the old key", i+1, rq.EventCount, rq.Header.Get("Authorization"))
		}
	}
}

func TestRun_SIGHUP_DataDirChange_KeepsTheOldDirAndSaysARestartIsNeeded(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a, base := startFileAgent(t, s.URL()+"/v1/batch", nil)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	writeConfig(t, a.file, with(base, map[string]string{"data_dir": elsewhere, "batch.max_events": "3"}))
	a.signal(t, syscall.SIGHUP)
	r := a.waitReload(t, 1)
	if r.Result != outbox.ReloadPartial || !slices.Equal(r.RestartNeeded, []string{"data_dir"}) || !slices.Equal(r.Applied, []string{"batch.max_events"}) {
		t.Fatalf("reload = %+v; want partial: batch.max_events applied, data_dir needing a restart", r)
	}
	a.waitLog(t, 5*time.Second, "keeps its old value until the agent restarts", "key=data_dir", "the queue is opened with it at start")
	if got := a.reloadsMetric(t, outbox.ReloadPartial); got != "1" {
		t.Errorf(`outbox_config_reloads_total{result="partial"} = %s, want 1`, got)
	}
	body, _ := trackBatch("after-partial", 6)
	if code, text, err := postAuth(a.url+"/v1/batch", "Bearer "+a.token, body); err != nil || code != http.StatusOK {
		t.Fatalf("ingest after the partial reload: %d %s %v", code, text, err)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 6); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Errorf("the new data_dir %s was created (%v); the agent must keep the old one", elsewhere, err)
	}
	if _, err := os.Stat(filepath.Join(a.dir, "outbox.lock")); err != nil {
		t.Errorf("the old data dir is not in use: %v", err)
	}
	for i, rq := range s.Requests() {
		if rq.EventCount > 3 {
			t.Errorf("upload %d: %d events; the live batch.max_events 3 of the same reload applies", i+1, rq.EventCount)
		}
	}
}

func TestReload_SignalsTheAgentOfTheDataDirAndPrintsTheResult(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a, base := startFileAgent(t, s.URL()+"/v1/batch", nil)
	cwd := t.TempDir()
	writeConfig(t, a.file, with(base, map[string]string{"batch.max_events": "9", "ingest.token": "tok-rotated"}))
	code, out, stderr := runCLI(t, cwd, map[string]string{}, "", "reload", "--config", a.file)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("agent (pid %d) reload: applied", a.cmd.Process.Pid)) ||
		!strings.Contains(out, "applied:        ingest.token, batch.max_events") {
		t.Fatalf("outbox reload: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	if strings.Contains(out, "tok-rotated") {
		t.Errorf("outbox reload prints the token")
	}
	code, out, stderr = runCLI(t, cwd, map[string]string{}, "", "status", "--config", a.file)
	if code != 0 || !strings.Contains(out, "last reload") || !strings.Contains(out, "applied") {
		t.Errorf("outbox status after the reload: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}

	// Invalid here: the agent is not signalled.
	writeConfig(t, a.file, with(base, map[string]string{"batch.max_events": "-1"}))
	code, _, stderr = runCLI(t, cwd, map[string]string{}, "", "reload", "--config", a.file)
	if code != 2 || !strings.Contains(stderr, "batch.max_events") || !strings.Contains(stderr, "the agent was not signalled") {
		t.Errorf("outbox reload with an invalid file: exit %d, err %q; want 2, the key, and that nothing was signalled", code, stderr)
	}
	a.token = "tok-rotated"
	if r := a.status(t).Reload; r == nil || r.Seq != 1 {
		t.Errorf("reload after the refused outbox reload: %+v, want still the first", r)
	}

	// No agent on the data directory: a specific error.
	idle := t.TempDir()
	code, _, stderr = runCLI(t, cwd, map[string]string{}, "", "reload", "--data-dir", idle)
	if code != 1 || !strings.Contains(stderr, "no outbox agent runs on data directory "+idle) {
		t.Errorf("outbox reload without an agent: exit %d, err %q", code, stderr)
	}
}

// keysByPrefix counts the accepted events of s by the messageId prefix before the last '-'
// and the upload key of their request: prefix → key → events.
func keysByPrefix(s *sink.Server) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, rq := range s.Accepted() {
		for _, id := range rq.MessageIDs {
			prefix := id[:strings.LastIndex(id, "-")]
			if out[prefix] == nil {
				out[prefix] = map[string]int{}
			}
			out[prefix][rq.Header.Get("Authorization")]++
		}
	}
	return out
}

func TestRun_SIGHUP_Sources_AddedReKeyedAndRemoved_TheRemovedOneDrainsWithItsLastKey(t *testing.T) {
	var holdA atomic.Bool // the collector answers 503 to app-a's key while set
	holdA.Store(true)
	s := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		if holdA.Load() && r.Header.Get("Authorization") == basicAuth("up-a") {
			return sink.Response{Status: http.StatusServiceUnavailable}
		}
		return scripted
	}})
	a, base := startFileAgent(t, s.URL()+"/v1/batch", map[string]string{
		"sources.app-a": "{write_keys: [in-a], upload_write_key: up-a}",
		"sources.app-b": "{write_keys: [in-b], upload_write_key: up-b}",
	})
	send := func(key, prefix string, n int) int {
		t.Helper()
		body, _ := trackBatch(prefix, n)
		code, text, err := postAuth(a.url+"/v1/batch", basicAuth(key), body)
		if err != nil {
			t.Fatalf("ingest with %s: %v", key, err)
		}
		if code != http.StatusOK && code != http.StatusUnauthorized {
			t.Fatalf("ingest with %s: %d %s", key, code, text)
		}
		return code
	}
	send("in-b", "b-before", 2)
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 2); err != nil {
		t.Fatalf("app-b's first events: %v", err)
	}
	send("in-a", "a-queued", 5) // refused by the collector: they stay queued

	// app-a removed, app-b re-keyed, app-c added.
	next := with(base, map[string]string{
		"sources.app-b": "{write_keys: [in-b], upload_write_key: up-b2}",
		"sources.app-c": "{write_keys: [in-c], upload_write_key: up-c}",
	})
	delete(next, "sources.app-a")
	writeConfig(t, a.file, next)
	a.signal(t, syscall.SIGHUP)
	r := a.waitReload(t, 1)
	if r.Result != outbox.ReloadApplied || !slices.Contains(r.Applied, "sources.app-c.upload_write_key") || !slices.Contains(r.Applied, "sources.app-a.upload_write_key") {
		t.Fatalf("reload = %+v; want applied, adding app-c and removing app-a", r)
	}
	var removed *outbox.SourceStatus
	for _, src := range a.status(t).Sources {
		if src.Name == "app-a" {
			removed = &src
		}
	}
	if removed == nil || !removed.Removed || removed.Events != 5 {
		t.Fatalf("app-a in the status after the reload: %+v; want removed with its 5 events", removed)
	}
	if code := send("in-a", "a-after", 1); code != http.StatusUnauthorized {
		t.Fatalf("the removed source's ingest key after the reload: %d, want 401 (no source lists it, other keys are set)", code)
	}
	send("in-b", "b-after", 2)
	send("in-c", "c-after", 3)

	holdA.Store(false)
	if err := s.WaitEvents(ctxFor(t, 20*time.Second), 2+5+2+3); err != nil {
		t.Fatalf("after the collector took app-a's key again: %v; got %v", err, keysByPrefix(s))
	}
	want := map[string]map[string]int{
		"b-before": {basicAuth("up-b"): 2},
		"a-queued": {basicAuth("up-a"): 5},
		"b-after":  {basicAuth("up-b2"): 2},
		"c-after":  {basicAuth("up-c"): 3},
	}
	if got := keysByPrefix(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("events by upload key %v, want %v", got, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(a.status(t).Sources, func(s outbox.SourceStatus) bool { return s.Name == "app-a" }) {
		if time.Now().After(deadline) {
			t.Fatal("app-a still in the status 10s after it drained")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.waitLog(t, 5*time.Second, "sources reconfigured", "app-a")
	for _, secret := range []string{"in-a", "in-b", "in-c", "up-a", "up-b", "up-c"} {
		if strings.Contains(a.stderr.String(), secret) {
			t.Fatalf("a write key (%s) reached the log:\n%s", secret, a.stderr.String())
		}
	}
}
