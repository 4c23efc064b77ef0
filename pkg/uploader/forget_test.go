package uploader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// goneID is the user forgotten in these tests: an email, so a leak is easy to grep for.
const goneID = "gone@example.com"

// userTrack is a track event of user with messageId id.
func userTrack(user, id string) map[string]any {
	return map[string]any{"type": "track", "event": "Tested", "userId": user, "messageId": id}
}

// messageIDs returns the messageIds of events, sorted.
func messageIDs(t *testing.T, evs []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var v struct{ MessageID string }
		if err := json.Unmarshal(e, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.MessageID)
	}
	slices.Sort(out)
	return out
}

func TestClient_Forget_QueuedDeadAndInFlightEventsAreNeverAccepted(t *testing.T) {
	// The first batch is refused for good (dead letter); the second is answered late, and
	// with a 503: Forget is called while it is in flight.
	snk := sinktest.Start(t, sink.Options{Script: sink.Script{Steps: []sink.Response{
		{Status: 404}, {Status: 503, Delay: 700 * time.Millisecond},
	}}})
	cfg := testConfig(t.TempDir(), snk.URL()+"/v1/batch")
	cfg.Upload.Concurrency = "1"
	cfg.Batch.MaxEvents = 4
	cfg.Retry.BackoffBase = 10 * time.Millisecond
	var logs syncBuffer
	c := open(t, cfg, uploader.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := waitCtx(t)

	if err := c.Enqueue(ctx, userTrack(goneID, "gone-0"), userTrack("kept", "kept-0")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Dead.Events != 2 {
		t.Fatalf("dead events = %d, want the 2 of the refused batch", st.Dead.Events)
	}
	if err := c.Enqueue(ctx, userTrack(goneID, "gone-1"), userTrack("kept", "kept-1"), userTrack(goneID, "gone-2"),
		userTrack("kept", "kept-2"), userTrack("kept", "kept-3"), userTrack(goneID, "gone-3")); err != nil {
		t.Fatal(err)
	}
	if err := snk.WaitRequests(ctx, 2); err != nil { // the second batch is in flight
		t.Fatal(err)
	}
	res, err := c.Forget(ctx, uploader.ForgetRequest{UserIDs: []string{goneID}})
	if err != nil {
		t.Fatal(err)
	}
	inFlight := len(snk.Requests()) // requests begun before Forget returned
	want := uploader.ForgetResult{Sources: []uploader.SourceForgotten{{Source: "default", Queued: 3, Dead: 1}}}
	if !slices.Equal(res.Sources, want.Sources) {
		t.Fatalf("Forget = %+v, want %+v", res, want)
	}
	if _, err := c.DeadLetters().Replay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := snk.WaitEvents(ctx, 4); err != nil { // the batch in flight is retried after its backoff
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := messageIDs(t, snk.Events()), []string{"kept-0", "kept-1", "kept-2", "kept-3"}; !slices.Equal(got, want) {
		t.Errorf("accepted events %v, want every other user's: %v", got, want)
	}
	for i, r := range snk.Requests() {
		for _, e := range r.Events {
			if i >= inFlight && bytes.Contains(e, []byte(goneID)) {
				t.Errorf("request %d, sent after Forget returned, holds the forgotten user: %s", i, e)
			}
		}
	}
	if strings.Contains(logs.String(), goneID) {
		t.Errorf("the log names the forgotten user:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "users forgotten") || !strings.Contains(logs.String(), "hash_key=data_dir_salt") {
		t.Errorf("no audit line with a keyed hash:\n%s", logs.String())
	}
}

// privacyConfig is testConfig with scrub rules, a hash key and a suppress file in dir.
func privacyConfig(t *testing.T, endpoint string) (uploader.Config, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(filepath.Join(dir, "data"), endpoint)
	key := filepath.Join(dir, "hash.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Privacy = uploader.PrivacyConfig{
		Rules:        []string{"context.ip=mask", "traits.email=hash", "properties.card=remove"},
		HashKeyFile:  key,
		SuppressFile: filepath.Join(dir, "suppressed.txt"),
	}
	return cfg, dir
}

func TestClient_Enqueue_ScrubsBeforeStoring(t *testing.T) {
	snk := sinkOK(t)
	cfg, _ := privacyConfig(t, snk.URL()+"/v1/batch")
	c := open(t, cfg)
	ctx := waitCtx(t)
	ev := map[string]any{"type": "identify", "userId": "u1", "messageId": "m1",
		"context": map[string]any{"ip": "203.0.113.9"}, "traits": map[string]any{"email": "secret@example.com", "plan": "pro"},
		"properties": map[string]any{"card": "4111111111111111"}}
	if err := c.Enqueue(ctx, ev); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.DataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"203.0.113.9", "secret@example.com", "4111111111111111"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the data file holds %q", secret)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs := snk.Events()
	if len(evs) != 1 {
		t.Fatalf("sink got %d events", len(evs))
	}
	var got struct {
		Context    map[string]any
		Traits     map[string]any
		Properties map[string]any
	}
	if err := json.Unmarshal(evs[0], &got); err != nil {
		t.Fatal(err)
	}
	if got.Context["ip"] != "***********" || len(got.Traits["email"].(string)) != 64 || got.Traits["plan"] != "pro" {
		t.Errorf("scrubbed event: %s", evs[0])
	}
	if _, ok := got.Properties["card"]; ok {
		t.Errorf("properties.card not removed: %s", evs[0])
	}
}

func TestClient_Suppress_DropsLaterEventsUntilUnsuppressed(t *testing.T) {
	snk := sinkOK(t)
	cfg, _ := privacyConfig(t, snk.URL()+"/v1/batch")
	c := open(t, cfg)
	ctx := waitCtx(t)
	if _, err := c.Forget(ctx, uploader.ForgetRequest{UserIDs: []string{goneID}, Suppress: true}); err != nil {
		t.Fatal(err)
	}
	list, err := os.ReadFile(cfg.Privacy.SuppressFile)
	if err != nil || !strings.Contains(string(list), goneID+"\n") {
		t.Fatalf("suppress file: %q, %v", list, err)
	}
	if err := c.Enqueue(ctx, userTrack(goneID, "s-1"), userTrack("kept", "k-1")); err != nil {
		t.Fatalf("Enqueue with a suppressed user's event: %v", err)
	}
	if err := c.Enqueue(ctx, userTrack(goneID, "s-2")); err != nil {
		t.Fatalf("Enqueue of a suppressed user's event alone: %v", err)
	}
	st := c.Stats()
	if st.Queue.Events != 1 || st.Queue.Dropped["suppressed"] != 2 {
		t.Fatalf("queued %d, dropped %v; want 1 queued and 2 suppressed", st.Queue.Events, st.Queue.Dropped)
	}
	if err := c.Unsuppress(goneID); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, userTrack(goneID, "s-3")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := messageIDs(t, snk.Events()), []string{"k-1", "s-3"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

func TestClient_ReloadSuppressList_ReadsTheFileAgain(t *testing.T) {
	cfg, _ := privacyConfig(t, closedPort(t))
	c := open(t, cfg)
	ctx := waitCtx(t)
	if err := os.WriteFile(cfg.Privacy.SuppressFile, []byte("# by hand\n\nhand-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, userTrack("hand-1", "h-1")); err != nil {
		t.Fatal(err)
	}
	if err := c.ReloadSuppressList(); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, userTrack("hand-1", "h-2")); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Queue.Events != 1 || st.Queue.Dropped["suppressed"] != 1 {
		t.Fatalf("queued %d, dropped %v: the list was read at the reload only", st.Queue.Events, st.Queue.Dropped)
	}
}

func TestOffline_Forget_DeletesFromAStoppedDataDirectory(t *testing.T) {
	cfg := testConfig(t.TempDir(), closedPort(t))
	c := open(t, cfg)
	ctx := waitCtx(t)
	if err := c.Enqueue(ctx, userTrack(goneID, "g"), userTrack("kept", "k")); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_ = c.Close(closeCtx)
	o, err := uploader.OpenOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var logs syncBuffer
	res, err := o.Forget(ctx, uploader.ForgetRequest{AnonymousIDs: []string{"nobody"}, UserIDs: []string{goneID}}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Sources[0].Queued != 1 || o.Stats().Queue.Events != 1 {
		t.Fatalf("Forget = %+v, %d left", res, o.Stats().Queue.Events)
	}
	if strings.Contains(logs.String(), goneID) || !strings.Contains(logs.String(), "users forgotten") {
		t.Fatalf("audit line: %s", logs.String())
	}
	if _, err := o.Forget(ctx, uploader.ForgetRequest{UserIDs: []string{goneID}, Suppress: true}, nil); err == nil {
		t.Fatal("suppress without privacy.suppress_file succeeded")
	}
}

func TestConfig_Validate_Privacy(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    uploader.PrivacyConfig
		want string
	}{
		{"unknown action", uploader.PrivacyConfig{Rules: []string{"context.ip=blur"}}, `unknown action "blur"`},
		{"bad path", uploader.PrivacyConfig{Rules: []string{"context..ip=mask"}}, "empty key"},
		{"hash rule without a key file", uploader.PrivacyConfig{Rules: []string{"traits.email=hash"}}, "needs a key: set privacy.hash_key_file"},
		{"missing key file", uploader.PrivacyConfig{Rules: []string{"traits.email=hash"}, HashKeyFile: filepath.Join(dir, "none")}, "cannot read the hash key"},
		{"short key", uploader.PrivacyConfig{HashKeyFile: short}, "at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := uploader.DefaultConfig()
			cfg.Privacy = tc.p
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v; want %q", err, tc.want)
			}
		})
	}
}
