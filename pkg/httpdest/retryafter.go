package httpdest

import (
	"net/http"
	"strings"
	"time"
)

// MaxRetryAfter is the largest delay ParseRetryAfter returns: a larger value (or one that would
// overflow time.Duration) is reported as MaxRetryAfter, still positive. The rate-limit budget
// caps every wait far below it anyway (retry.retry_after_cap).
const MaxRetryAfter = 100 * 365 * 24 * time.Hour

// ParseRetryAfter parses a Retry-After header value (RFC 9110 section 10.2.3) relative to now.
// It accepts delay-seconds (1*DIGIT) greater than zero, and an HTTP-date in any of the three
// formats RFC 9110 allows (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", the obsolete RFC 850
// "Sunday, 06-Nov-94 08:49:37 GMT" and asctime "Sun Nov  6 08:49:37 1994") that lies after now.
// Surrounding whitespace is ignored. It returns ok false, meaning "absent", for an empty value,
// 0, a negative or signed number, a fraction, a date at or before now, and anything else. When
// ok is true, d is in (0, MaxRetryAfter]; huge values saturate instead of wrapping.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseDelaySeconds(v)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = t.Sub(now) // saturates at the Duration limits
	if d <= 0 {
		return 0, false
	}
	return min(d, MaxRetryAfter), true
}

// parseDelaySeconds parses a string of ASCII digits, saturating at MaxRetryAfter.
func parseDelaySeconds(v string) (time.Duration, bool) {
	const maxSeconds = int64(MaxRetryAfter / time.Second)
	var n int64
	for i := 0; i < len(v); i++ {
		n = n*10 + int64(v[i]-'0')
		if n > maxSeconds {
			return MaxRetryAfter, true
		}
	}
	if n == 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
