package uploader_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// noNetwork is a transport that sends nothing: the tests below open clients pointed at
// Segment's API and must never reach it.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the test sends nothing off this machine")
}

// logBuffer is a slog text sink safe for the client's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestOpen_WarnsWhenSegmentWouldGetNoWriteKey(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string // "" keeps the default, Segment's
		writeKey string
		headers  map[string]string
		hook     bool
		warns    bool
	}{
		{name: "the default endpoint without a key warns", warns: true},
		{name: "Segment's endpoint set by hand without a key warns", endpoint: "https://api.segment.io/v1/batch", warns: true},
		{name: "Segment's EU endpoint without a key warns", endpoint: "https://events.eu1.segmentapis.com/v1/batch", warns: true},
		{name: "a write key is enough", writeKey: "wk_live"},
		{name: "an Authorization header brings its own credentials", headers: map[string]string{"authorization": "Bearer t"}},
		{name: "a request hook may sign the request", hook: true},
		{name: "another collector needs no key", endpoint: "http://127.0.0.1:8090/v1/batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuffer
			cfg := uploader.DefaultConfig()
			cfg.DataDir = t.TempDir()
			if tt.endpoint != "" {
				cfg.Upload.Endpoint = tt.endpoint
			}
			cfg.Upload.WriteKey = tt.writeKey
			cfg.Upload.Headers = tt.headers
			opts := []uploader.Option{uploader.WithTransport(noNetwork{}), uploader.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if tt.hook {
				opts = append(opts, uploader.WithRequestHook(func(*http.Request) error { return nil }))
			}
			client, err := segment.Open(cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			warned := strings.Contains(out, "level=WARN") && strings.Contains(out, "upload.write_key is empty")
			if warned != tt.warns {
				t.Errorf("warned = %v, want %v; log:\n%s", warned, tt.warns, out)
			}
			if tt.writeKey != "" && strings.Contains(out, tt.writeKey) {
				t.Errorf("the log shows the write key:\n%s", out)
			}
		})
	}
}

// A library user has no --data-dir flag: the error for a directory another process holds
// names the process and the fix in the library's own terms.
func TestOpen_LockedDataDir_ErrorNamesNoCommandLineFlag(t *testing.T) {
	cfg := uploader.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Upload.Endpoint = "http://127.0.0.1:1/v1/batch"
	first, err := segment.Open(cfg, uploader.WithTransport(noNetwork{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close(context.Background()) })
	_, err = segment.Open(cfg, uploader.WithTransport(noNetwork{}))
	if !errors.Is(err, errs.ErrLocked) {
		t.Fatalf("second Open = %v, want errs.ErrLocked", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "--") {
		t.Errorf("error %q names a command-line flag", msg)
	}
	if !strings.Contains(msg, "stop it or use another data directory") {
		t.Errorf("error %q does not say what to do", msg)
	}
}
