package uploader_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestDefaultConfig_HoldsTheSpecDefaults(t *testing.T) {
	c := uploader.DefaultConfig()
	checks := []struct {
		key       string
		got, want any
	}{
		{"data_dir", c.DataDir, "./outbox-data"},
		{"limits.max_event_bytes", c.Limits.MaxEventBytes, 32768},
		{"limits.max_request_bytes", c.Limits.MaxRequestBytes, 512000},
		{"upload.endpoint", c.Upload.Endpoint, "https://api.segment.io/v1/batch"},
		{"upload.format", c.Upload.Format, "segment"},
		{"upload.gzip", c.Upload.Gzip, true},
		{"upload.timeout", c.Upload.Timeout, 30 * time.Second},
		{"upload.split_rejected", c.Upload.SplitRejected, true},
		{"batch.max_events", c.Batch.MaxEvents, 500},
		{"batch.max_bytes", c.Batch.MaxBytes, 500000},
		{"batch.interval", c.Batch.Interval, 5 * time.Second},
		{"retry.max_retries", c.Retry.MaxRetries, 10},
		{"retry.backoff_base", c.Retry.BackoffBase, 500 * time.Millisecond},
		{"retry.backoff_cap", c.Retry.BackoffCap, 60 * time.Second},
		{"retry.max_total_backoff", c.Retry.MaxTotalBackoff, 12 * time.Hour},
		{"retry.retry_after_cap", c.Retry.RetryAfterCap, 300 * time.Second},
		{"retry.max_rate_limit_duration", c.Retry.MaxRateLimitDuration, 12 * time.Hour},
		{"queue.max_bytes", c.Queue.MaxBytes, int64(1 << 30)},
		{"queue.when_full", c.Queue.WhenFull, "reject"},
		{"queue.sync", c.Queue.Sync, "always"},
		{"dead.max_bytes", c.Dead.MaxBytes, int64(256 << 20)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.key, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
}

func TestConfig_Validate_NamesTheKey(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*uploader.Config)
		want   string
	}{
		{"endpoint must be http or https", func(c *uploader.Config) { c.Upload.Endpoint = "ftp://x" }, `upload.endpoint "ftp://x": must be an http or https URL`},
		{"endpoint needs a host", func(c *uploader.Config) { c.Upload.Endpoint = "http://" }, "upload.endpoint"},
		{"format is segment only", func(c *uploader.Config) { c.Upload.Format = "csv" }, "upload.format"},
		{"negative timeout", func(c *uploader.Config) { c.Upload.Timeout = -time.Second }, "upload.timeout"},
		{"header names are tokens", func(c *uploader.Config) { c.Upload.Headers = map[string]string{"Bad Header": "x"} }, "upload.headers"},
		{"batch.max_bytes must hold one event", func(c *uploader.Config) { c.Batch.MaxBytes = 1000 }, "batch.max_bytes"},
		{"negative max_events", func(c *uploader.Config) { c.Batch.MaxEvents = -1 }, "batch.max_events"},
		{"when_full is an enum", func(c *uploader.Config) { c.Queue.WhenFull = "wait" }, "queue.when_full"},
		{"sync is an enum", func(c *uploader.Config) { c.Queue.Sync = "sometimes" }, "queue.sync"},
		{"retry settings are checked by pkg/budget", func(c *uploader.Config) { c.Retry.BackoffCap = time.Millisecond }, "retry.backoff_cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := uploader.DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if !errors.Is(err, errs.ErrInvalidConfig) {
				t.Errorf("error does not match errs.ErrInvalidConfig")
			}
			if _, err := segment.Open(c); err == nil {
				t.Errorf("Open accepted the invalid config")
			}
		})
	}
}

func TestConfig_ZeroValuesAreFilledByOpen(t *testing.T) {
	var c uploader.Config
	c.DataDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("a zero Config (but data_dir) must validate, its zeros being defaults: %v", err)
	}
}

func TestConfig_MapstructureTags_MatchTheConfigurationKeys(t *testing.T) {
	v := viper.New()
	v.SetConfigType("yaml")
	yaml := `
data_dir: /tmp/x
limits: {max_event_bytes: 1000, max_request_bytes: 2000}
upload:
  endpoint: http://127.0.0.1:1/v1/batch
  write_key: k
  format: segment
  gzip: false
  timeout: 3s
  headers: {X-Team: a}
  ca_file: /ca.pem
  split_rejected: false
batch: {max_events: 7, max_bytes: 9000, interval: 2s}
retry: {max_retries: 3, backoff_base: 1s, backoff_cap: 2s, max_total_backoff: 1h, retry_after_cap: 10s, max_rate_limit_duration: 2h}
queue: {max_bytes: 123, when_full: block, sync: none}
dead: {max_bytes: 456}
`
	if err := v.ReadConfig(strings.NewReader(yaml)); err != nil {
		t.Fatal(err)
	}
	c := uploader.DefaultConfig()
	if err := v.UnmarshalExact(&c); err != nil {
		t.Fatalf("UnmarshalExact: %v", err)
	}
	if c.DataDir != "/tmp/x" || c.Limits.MaxEventBytes != 1000 || c.Limits.MaxRequestBytes != 2000 ||
		c.Upload.Endpoint != "http://127.0.0.1:1/v1/batch" || c.Upload.WriteKey != "k" || c.Upload.Gzip ||
		c.Upload.Timeout != 3*time.Second || c.Upload.CAFile != "/ca.pem" || c.Upload.SplitRejected ||
		c.Batch.MaxEvents != 7 || c.Batch.MaxBytes != 9000 || c.Batch.Interval != 2*time.Second ||
		c.Retry.MaxRetries != 3 || c.Retry.MaxRateLimitDuration != 2*time.Hour ||
		c.Queue.MaxBytes != 123 || c.Queue.WhenFull != "block" || c.Queue.Sync != "none" || c.Dead.MaxBytes != 456 {
		t.Errorf("decoded config = %+v", c)
	}
	if c.Upload.Headers["x-team"] != "a" && c.Upload.Headers["X-Team"] != "a" {
		t.Errorf("headers = %v", c.Upload.Headers)
	}
}

func TestConfig_Validate_RejectsHeadersTheWireContractOwns(t *testing.T) {
	tests := []struct {
		name     string
		header   string
		writeKey string
		want     string // "" → accepted
	}{
		{"X-Retry-Count is set per attempt", "X-Retry-Count", "", "upload.headers.X-Retry-Count: reserved"},
		{"names compare case-insensitively (viper lower-cases keys)", "x-retry-count", "", "upload.headers.x-retry-count: reserved"},
		{"Content-Type is application/json", "Content-Type", "", "upload.headers.Content-Type: reserved"},
		{"Content-Encoding follows upload.gzip", "content-encoding", "", "upload.headers.content-encoding: reserved"},
		{"Content-Length is the client's", "Content-Length", "", "upload.headers.Content-Length: reserved"},
		{"Transfer-Encoding is the client's", "TRANSFER-ENCODING", "", "upload.headers.TRANSFER-ENCODING: reserved"},
		{"Host comes from upload.endpoint", "host", "", "upload.headers.host: reserved"},
		{"User-Agent is outbox/<version>", "User-Agent", "", "upload.headers.User-Agent: reserved"},
		{"Authorization clashes with upload.write_key", "authorization", "wk", "upload.headers.authorization: reserved while upload.write_key is set"},
		{"Authorization without a write key is the user's", "Authorization", "", ""},
		{"other headers are the user's", "X-Team", "wk", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := uploader.DefaultConfig()
			c.DataDir = t.TempDir()
			c.Upload.WriteKey = tt.writeKey
			c.Upload.Headers = map[string]string{tt.header: "s3cret-99"}
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errs.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want an errs.ErrInvalidConfig containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret-99") {
				t.Errorf("the error shows the header's value (it may be a credential): %v", err)
			}
			if _, err := segment.Open(c); err == nil {
				t.Errorf("Open accepted upload.headers.%s", tt.header)
			}
		})
	}
}
