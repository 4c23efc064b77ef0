package uploader_test

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, time.March, 4, 5, 6, 7, 0, time.UTC) // a Tuesday
	mono := time.Now()                                          // a time with a monotonic reading
	tests := []struct {
		name string
		v    string
		now  time.Time
		want time.Duration // 0: absent
	}{
		{"delay-seconds", "120", now, 120 * time.Second},
		{"one second", "1", now, time.Second},
		{"leading zeros are digits", "007", now, 7 * time.Second},
		{"surrounding whitespace is trimmed", " \t 5 \r\n", now, 5 * time.Second},
		{"IMF-fixdate in the future", "Tue, 04 Mar 2025 05:08:07 GMT", now, 2 * time.Minute},
		{"RFC 850 date in the future", "Tuesday, 04-Mar-25 05:08:07 GMT", now, 2 * time.Minute},
		{"asctime date in the future", "Tue Mar  4 05:08:07 2025", now, 2 * time.Minute},
		{"date with surrounding whitespace", "  Tue, 04 Mar 2025 05:06:08 GMT ", now, time.Second},
		{"future date against a monotonic now", mono.UTC().Add(time.Hour).Format("Mon, 02 Jan 2006 15:04:05 GMT"), mono, time.Hour - time.Duration(mono.Nanosecond())},
		{"huge delay-seconds saturates at MaxRetryAfter", "99999999999999999999999999999", now, uploader.MaxRetryAfter},
		{"delay-seconds just over MaxRetryAfter saturates", "3153600001", now, uploader.MaxRetryAfter},
		{"a date far in the future saturates", "Fri, 31 Dec 9999 23:59:59 GMT", now, uploader.MaxRetryAfter},
		{"zero is absent", "0", now, 0},
		{"many zeros are absent", "0000", now, 0},
		{"negative is absent", "-1", now, 0},
		{"explicit plus sign is absent", "+5", now, 0},
		{"fraction is absent", "1.5", now, 0},
		{"empty is absent", "", now, 0},
		{"whitespace only is absent", "   ", now, 0},
		{"garbage is absent", "abc", now, 0},
		{"digits with trailing garbage are absent", "10s", now, 0},
		{"inner whitespace is absent", "1 0", now, 0},
		{"date equal to now is absent", "Tue, 04 Mar 2025 05:06:07 GMT", now, 0},
		{"past IMF-fixdate is absent", "Tue, 04 Mar 2025 05:06:06 GMT", now, 0},
		{"past RFC 850 date is absent", "Sunday, 06-Nov-94 08:49:37 GMT", now, 0},
		{"past asctime date is absent", "Sun Nov  6 08:49:37 1994", now, 0},
		{"date in another zone is absent", "Tue, 04 Mar 2025 06:08:07 CET", now, 0},
		{"ISO 8601 is absent", "2025-03-04T05:08:07Z", now, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := uploader.ParseRetryAfter(tt.v, tt.now)
			if ok != (tt.want > 0) || d != tt.want {
				t.Fatalf("ParseRetryAfter(%q) = %s, %v; want %s, %v", tt.v, d, ok, tt.want, tt.want > 0)
			}
		})
	}
}

// FuzzParseRetryAfter: never panics, and ok always comes with a delay in (0, MaxRetryAfter];
// a value of digits only is ok exactly when it is not all zeros.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "abc", " 5 ", "99999999999999999999",
		"Tue, 04 Mar 2025 05:08:07 GMT", "Tuesday, 04-Mar-25 05:08:07 GMT", "Tue Mar  4 05:08:07 2025", ""} {
		f.Add(s, int64(1741064767))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		now := time.Unix(unix, 0)
		d, ok := uploader.ParseRetryAfter(v, now)
		if ok && (d <= 0 || d > uploader.MaxRetryAfter) {
			t.Fatalf("ParseRetryAfter(%q) = %s, true: outside (0, MaxRetryAfter]", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %s, false: want 0 when absent", v, d)
		}
		if s := strings.TrimSpace(v); s != "" && strings.Trim(s, "0123456789") == "" {
			if want := strings.Trim(s, "0") != ""; ok != want {
				t.Fatalf("ParseRetryAfter(%q) ok = %v, want %v", v, ok, want)
			}
		}
	})
}
