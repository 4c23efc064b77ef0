package uploader_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

var now = time.Date(2025, time.March, 4, 5, 6, 7, 0, time.UTC)

func response(code int, retryAfter string) *http.Response {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: code, Header: h}
}

// specRetryable is the contract's list of retryable statuses, written out independently of IsRetryableStatus.
func specRetryable(code int) bool {
	switch code {
	case 408, 410, 429, 460:
		return true
	case 501, 505, 511:
		return false
	}
	return code >= 500 && code <= 599
}

func TestIsRetryableStatus_EveryStatus(t *testing.T) {
	for code := 100; code <= 599; code++ {
		if got := uploader.IsRetryableStatus(code); got != specRetryable(code) {
			t.Errorf("IsRetryableStatus(%d) = %v, want %v", code, got, !got)
		}
	}
	for _, code := range []int{-1, 0, 99, 600, 999} {
		if uploader.IsRetryableStatus(code) {
			t.Errorf("IsRetryableStatus(%d) = true for a code outside 100–599", code)
		}
	}
}

// TestClassify_EveryStatus checks every status 100–599 with no Retry-After, a usable one, and
// unusable ones, against the classification table.
func TestClassify_EveryStatus(t *testing.T) {
	headers := []struct {
		name   string
		value  string
		usable bool
	}{
		{"no Retry-After", "", false},
		{"Retry-After 120", "120", true},
		{"Retry-After future date", now.Add(time.Hour).Format(http.TimeFormat), true},
		{"Retry-After 0 counts as absent", "0", false},
		{"Retry-After garbage counts as absent", "soon", false},
	}
	for code := 100; code <= 599; code++ {
		for _, h := range headers {
			want := uploader.ClassRejected
			switch {
			case code >= 200 && code <= 299:
				want = uploader.ClassSuccess
			case specRetryable(code) && h.usable:
				want = uploader.ClassRateLimited
			case specRetryable(code):
				want = uploader.ClassRetryable
			case code == 413:
				want = uploader.ClassTooLarge
			case code == 401 || code == 403:
				want = uploader.ClassAuthRefused
			}
			o := uploader.Classify(response(code, h.value), nil, now)
			if o.Class != want || o.Status != code || o.NetError != "" || o.Err != nil {
				t.Errorf("%d with %s: got %+v, want class %s", code, h.name, o, want)
			}
			if (o.Class == uploader.ClassRateLimited) != (o.RetryAfter > 0) {
				t.Errorf("%d with %s: RetryAfter %s with class %s", code, h.name, o.RetryAfter, o.Class)
			}
		}
	}
}

func TestClassify_RateLimitedCarriesTheParsedDelay(t *testing.T) {
	o := uploader.Classify(response(429, "120"), nil, now)
	if o.Class != uploader.ClassRateLimited || o.RetryAfter != 120*time.Second {
		t.Fatalf("got %+v, want rate_limited 2m", o)
	}
	o = uploader.Classify(response(503, now.Add(90*time.Second).Format(http.TimeFormat)), nil, now)
	if o.Class != uploader.ClassRateLimited || o.RetryAfter != 90*time.Second {
		t.Fatalf("got %+v, want rate_limited 90s (date measured against now)", o)
	}
}

func TestClassify_Errors(t *testing.T) {
	reset := fmt.Errorf("Post %q: %w", "http://x", io.ErrUnexpectedEOF)
	tests := []struct {
		name    string
		resp    *http.Response
		err     error
		class   uploader.Class
		status  int
		netErr  uploader.NetErrorClass
		errSame bool // Outcome.Err is err itself
	}{
		{"our context canceled is aborted, not a network error", nil, fmt.Errorf("Post: %w", context.Canceled), uploader.ClassAborted, 0, "", true},
		{"a request hook error is aborted", nil, &uploader.HookError{Err: errors.New("token")}, uploader.ClassAborted, 0, "", true},
		{"a configuration error is aborted", nil, &uploader.ConfigError{Key: "upload.endpoint", Err: errors.New("bad")}, uploader.ClassAborted, 0, "", true},
		{"a deadline is a timeout network error", nil, fmt.Errorf("Post: %w", context.DeadlineExceeded), uploader.ClassRetryable, 0, uploader.MaybeSent, true},
		{"an unknown transport error may have been sent", nil, reset, uploader.ClassRetryable, 0, uploader.MaybeSent, true},
		{"a response with a redirect error is classified by status", response(302, ""), errors.New("stopped after 3 redirects"), uploader.ClassRejected, 302, "", true},
		{"no response and no error is aborted", nil, nil, uploader.ClassAborted, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := uploader.Classify(tt.resp, tt.err, now)
			if o.Class != tt.class || o.Status != tt.status || o.NetError != tt.netErr {
				t.Fatalf("got %+v, want class %s status %d net %q", o, tt.class, tt.status, tt.netErr)
			}
			if tt.errSame && o.Err != tt.err {
				t.Fatalf("Err = %v, want the error itself (%v)", o.Err, tt.err)
			}
			if o.Class == uploader.ClassAborted && o.Err == nil {
				t.Fatal("an aborted outcome carries no error")
			}
		})
	}
}

func TestClass_String(t *testing.T) {
	want := map[uploader.Class]string{
		uploader.ClassSuccess: "success", uploader.ClassRateLimited: "rate_limited",
		uploader.ClassRetryable: "retryable", uploader.ClassTooLarge: "too_large",
		uploader.ClassRejected: "rejected", uploader.ClassAborted: "aborted",
		uploader.Class(0): "unknown", uploader.Class(99): "unknown",
	}
	for c, s := range want {
		if c.String() != s {
			t.Errorf("Class(%d).String() = %q, want %q", int(c), c.String(), s)
		}
	}
}
