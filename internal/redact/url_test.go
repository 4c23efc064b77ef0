package redact_test

import (
	"testing"

	"github.com/outboxhq/outbox/internal/redact"
)

func TestURL_HidesUserinfoAndQueryValuesOnly(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a plain URL is unchanged", "https://api.segment.io/v1/batch", "https://api.segment.io/v1/batch"},
		{"user and password are hidden", "https://user:s3cret@collector.example:8443/v1/batch", "https://REDACTED@collector.example:8443/v1/batch"},
		{"a user name alone (a write key) is hidden", "https://wk_live_123@collector.example/v1/batch", "https://REDACTED@collector.example/v1/batch"},
		{"query values are hidden, names kept in order", "https://c.example/v1/batch?api_key=abc&region=eu&flag", "https://c.example/v1/batch?api_key=REDACTED&region=REDACTED&flag=REDACTED"},
		{"both at once", "http://u:p@127.0.0.1:9/x?token=t", "http://REDACTED@127.0.0.1:9/x?token=REDACTED"},
		{"text that does not parse is hidden roughly", "https://user:pa ss%zz@host/x?k=v", "https://REDACTED@host/x?REDACTED"},
		{"empty stays empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact.URL(tc.in); got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
