package httpdest_test

import (
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/httpdest"
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
		{"huge delay-seconds saturates at MaxRetryAfter", "99999999999999999999999999999", now, httpdest.MaxRetryAfter},
		{"delay-seconds just over MaxRetryAfter saturates", "3153600001", now, httpdest.MaxRetryAfter},
		{"a date far in the future saturates", "Fri, 31 Dec 9999 23:59:59 GMT", now, httpdest.MaxRetryAfter},
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
			d, ok := httpdest.ParseRetryAfter(tt.v, tt.now)
			if ok != (tt.want > 0) || d != tt.want {
				t.Fatalf("ParseRetryAfter(%q) = %s, %v; want %s, %v", tt.v, d, ok, tt.want, tt.want > 0)
			}
		})
	}
}

// FuzzParseRetryAfter: ok always comes with a delay in (0, MaxRetryAfter] and absent is 0;
// delay-seconds n parse to min(n s, MaxRetryAfter) (absent for 0); an HTTP-date parses to its
// distance from the injected now, capped at MaxRetryAfter (absent at or before now). It checks
// the fuzzer's string as it is, then a value built from its numbers whose answer is known:
// offset as delay-seconds (with leadZeros zeros in front), and now+offset seconds written in one
// of the three HTTP-date formats.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "abc", " 5 ", "99999999999999999999",
		"Tue, 04 Mar 2025 05:08:07 GMT", "Tuesday, 04-Mar-25 05:08:07 GMT", "Tue Mar  4 05:08:07 2025", ""} {
		f.Add(s, int64(1741064767), int64(120), uint8(0))
	}
	f.Add("3153600001", int64(0), int64(3153600001), uint8(1))
	f.Add("", int64(1741064767), int64(-5), uint8(2))
	f.Add("", int64(1741064767), int64(4000000000), uint8(3))
	f.Fuzz(func(t *testing.T, v string, unix, offset int64, pick uint8) {
		now := time.Unix(unix, 0)
		checkRetryAfter(t, v, now)

		if offset >= 0 {
			digits := strings.Repeat("0", int(pick%4)) + strconv.FormatInt(offset, 10)
			want := min(time.Duration(offset)*time.Second, httpdest.MaxRetryAfter)
			if offset > int64(httpdest.MaxRetryAfter/time.Second) {
				want = httpdest.MaxRetryAfter // n s itself would overflow a Duration
			}
			wantRetryAfter(t, digits, now, want)
		}

		sec := unix + offset
		if (offset > 0) != (sec > unix) {
			return // overflow
		}
		when := time.Unix(sec, 0).UTC()
		formats := []string{http.TimeFormat, time.RFC850, time.ANSIC}
		format := formats[int(pick)%len(formats)]
		lo, hi := 1000, 9999
		if format == time.RFC850 {
			lo, hi = 1969, 2068 // a two-digit year names one of these
		}
		if when.Year() < lo || when.Year() > hi {
			return
		}
		date := when.Format(format)
		if format == time.RFC850 {
			date = strings.Replace(date, "UTC", "GMT", 1)
		}
		wantRetryAfter(t, date, now, min(when.Sub(now), httpdest.MaxRetryAfter))
	})
}

// checkRetryAfter asserts the properties of any value: the answer's range, and the answer
// itself for a value of digits or one http.ParseTime reads.
func checkRetryAfter(t *testing.T, v string, now time.Time) {
	t.Helper()
	d, ok := httpdest.ParseRetryAfter(v, now)
	if ok && (d <= 0 || d > httpdest.MaxRetryAfter) {
		t.Fatalf("ParseRetryAfter(%q) = %s, true: outside (0, MaxRetryAfter]", v, d)
	}
	if !ok && d != 0 {
		t.Fatalf("ParseRetryAfter(%q) = %s, false: want 0 when absent", v, d)
	}
	s := strings.TrimSpace(v)
	if s != "" && strings.Trim(s, "0123456789") == "" {
		n, _ := new(big.Int).SetString(s, 10)
		want := httpdest.MaxRetryAfter
		if n.Cmp(big.NewInt(int64(httpdest.MaxRetryAfter/time.Second))) <= 0 {
			want = time.Duration(n.Int64()) * time.Second
		}
		wantRetryAfter(t, v, now, want)
		return
	}
	if at, err := http.ParseTime(s); err == nil {
		wantRetryAfter(t, v, now, min(at.Sub(now), httpdest.MaxRetryAfter))
	}
}

// wantRetryAfter asserts ParseRetryAfter(v, now) is want, or absent when want is not positive.
func wantRetryAfter(t *testing.T, v string, now time.Time, want time.Duration) {
	t.Helper()
	want = max(want, 0)
	d, ok := httpdest.ParseRetryAfter(v, now)
	if d != want || ok != (want > 0) {
		t.Fatalf("ParseRetryAfter(%q, %s) = %s, %v; want %s, %v", v, now.UTC(), d, ok, want, want > 0)
	}
}
