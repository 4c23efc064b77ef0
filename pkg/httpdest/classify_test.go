package httpdest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
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
		if got := httpdest.IsRetryableStatus(code); got != specRetryable(code) {
			t.Errorf("IsRetryableStatus(%d) = %v, want %v", code, got, !got)
		}
	}
	for _, code := range []int{-1, 0, 99, 600, 999} {
		if httpdest.IsRetryableStatus(code) {
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
			want := delivery.ClassRejected
			switch {
			case code >= 200 && code <= 299:
				want = delivery.ClassSuccess
			case specRetryable(code) && h.usable:
				want = delivery.ClassRateLimited
			case specRetryable(code):
				want = delivery.ClassRetryable
			case code == 413:
				want = delivery.ClassTooLarge
			case code == 401 || code == 403:
				want = delivery.ClassAuthRefused
			}
			o := httpdest.Classify(response(code, h.value), nil, now)
			if o.Class != want || o.Status != code || o.NetError != "" || o.Err != nil {
				t.Errorf("%d with %s: got %+v, want class %s", code, h.name, o, want)
			}
			if (o.Class == delivery.ClassRateLimited) != (o.RetryAfter > 0) {
				t.Errorf("%d with %s: RetryAfter %s with class %s", code, h.name, o.RetryAfter, o.Class)
			}
		}
	}
}

func TestClassify_RateLimitedCarriesTheParsedDelay(t *testing.T) {
	o := httpdest.Classify(response(429, "120"), nil, now)
	if o.Class != delivery.ClassRateLimited || o.RetryAfter != 120*time.Second {
		t.Fatalf("got %+v, want rate_limited 2m", o)
	}
	o = httpdest.Classify(response(503, now.Add(90*time.Second).Format(http.TimeFormat)), nil, now)
	if o.Class != delivery.ClassRateLimited || o.RetryAfter != 90*time.Second {
		t.Fatalf("got %+v, want rate_limited 90s (date measured against now)", o)
	}
}

func TestClassify_Errors(t *testing.T) {
	reset := fmt.Errorf("Post %q: %w", "http://x", io.ErrUnexpectedEOF)
	tests := []struct {
		name    string
		resp    *http.Response
		err     error
		class   delivery.Class
		status  int
		netErr  delivery.NetErrorClass
		errSame bool // Outcome.Err is err itself
	}{
		{"our context canceled is aborted, not a network error", nil, fmt.Errorf("Post: %w", context.Canceled), delivery.ClassAborted, 0, "", true},
		{"a request hook error is aborted", nil, &httpdest.HookError{Err: errors.New("token")}, delivery.ClassAborted, 0, "", true},
		{"a configuration error is aborted", nil, &delivery.ConfigError{Key: "upload.endpoint", Err: errors.New("bad")}, delivery.ClassAborted, 0, "", true},
		{"a deadline is a timeout network error", nil, fmt.Errorf("Post: %w", context.DeadlineExceeded), delivery.ClassRetryable, 0, delivery.MaybeSent, true},
		{"an unknown transport error may have been sent", nil, reset, delivery.ClassRetryable, 0, delivery.MaybeSent, true},
		{"a response with a redirect error is classified by status", response(302, ""), errors.New("stopped after 3 redirects"), delivery.ClassRejected, 302, "", true},
		{"no response and no error is aborted", nil, nil, delivery.ClassAborted, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := httpdest.Classify(tt.resp, tt.err, now)
			if o.Class != tt.class || o.Status != tt.status || o.NetError != tt.netErr {
				t.Fatalf("got %+v, want class %s status %d net %q", o, tt.class, tt.status, tt.netErr)
			}
			if tt.errSame && o.Err != tt.err {
				t.Fatalf("Err = %v, want the error itself (%v)", o.Err, tt.err)
			}
			if o.Class == delivery.ClassAborted && o.Err == nil {
				t.Fatal("an aborted outcome carries no error")
			}
		})
	}
}

// TestClassify_SaysWhatAnAnswerMeans: the uploader reads no status, so the classifier marks
// back-pressure (a 429 with or without Retry-After, a timeout) and the rejections that
// bisection may isolate (400, 422).
func TestClassify_SaysWhatAnAnswerMeans(t *testing.T) {
	tests := []struct {
		name                   string
		resp                   *http.Response
		err                    error
		backPressure, splittab bool
	}{
		{"429 without Retry-After is back-pressure", response(429, ""), nil, true, false},
		{"429 with Retry-After is back-pressure too", response(429, "1"), nil, true, false},
		{"503 is a failure, not back-pressure", response(503, ""), nil, false, false},
		{"a timeout is back-pressure", nil, context.DeadlineExceeded, true, false},
		{"a reset is not", nil, io.ErrUnexpectedEOF, false, false},
		{"400 is splittable", response(400, ""), nil, false, true},
		{"422 is splittable", response(422, ""), nil, false, true},
		{"404 is not", response(404, ""), nil, false, false},
		{"200 is neither", response(200, ""), nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := httpdest.Classify(tt.resp, tt.err, now)
			if o.BackPressure != tt.backPressure || o.Splittable != tt.splittab {
				t.Fatalf("BackPressure %v, Splittable %v; want %v, %v", o.BackPressure, o.Splittable, tt.backPressure, tt.splittab)
			}
		})
	}
}

// A request hook's error is named in the outcome's Code, so metrics and status tell it from
// other reasons nothing was sent without the uploader knowing this destination's types.
func TestClassify_AHookErrorIsNamedHookError(t *testing.T) {
	o := httpdest.Classify(nil, &httpdest.HookError{Err: errors.New("token")}, time.Now())
	if o.Class != delivery.ClassAborted || o.Code != "hook_error" {
		t.Fatalf("got %+v, want aborted with code hook_error", o)
	}
}
