package uploader

import (
	"testing"
	"time"
)

func TestHold_RetryAfterAndRefusedCredentials(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		at         time.Duration // since t0
		retryAfter time.Duration // > 0: a Retry-After until t0+retryAfter
		refuse     bool
		resume     bool
		probeNow   bool
	}
	tests := []struct {
		name  string
		steps []step
		at    time.Duration
		head  bool
		wait  time.Duration
		path  string
		ok    bool
	}{
		{"no hold lets every attempt go at once", nil, 0, false, 0, PathRateLimit, true},
		{"a Retry-After holds every batch until its deadline",
			[]step{{retryAfter: 10 * time.Second}}, 4 * time.Second, false, 6 * time.Second, PathRateLimit, true},
		{"the latest Retry-After wins",
			[]step{{retryAfter: 10 * time.Second}, {retryAfter: 3 * time.Second}}, 0, true, 10 * time.Second, PathRateLimit, true},
		{"a Retry-After that has passed holds nothing",
			[]step{{retryAfter: time.Second}}, 2 * time.Second, false, 0, PathRateLimit, true},
		{"refused credentials hold every batch but the head",
			[]step{{refuse: true}}, time.Second, false, 0, PathAuth, false},
		{"refused credentials let the head probe once per probe period",
			[]step{{refuse: true}}, 15 * time.Second, true, authProbeInterval - 15*time.Second, PathAuth, true},
		{"a refusal again moves the next probe a period on",
			[]step{{refuse: true}, {at: 50 * time.Second, refuse: true}}, 60 * time.Second, true, authProbeInterval - 10*time.Second, PathAuth, true},
		{"a change of credentials makes the head probe at once",
			[]step{{refuse: true}, {at: 5 * time.Second, probeNow: true}}, 5 * time.Second, true, 0, PathAuth, true},
		{"a Retry-After later than the probe holds the head too",
			[]step{{refuse: true}, {retryAfter: 2 * authProbeInterval}}, 0, true, 2 * authProbeInterval, PathAuth, true},
		{"a success ends the hold on refused credentials",
			[]step{{refuse: true}, {at: time.Second, resume: true}}, time.Second, false, 0, PathRateLimit, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hold
			for _, s := range tt.steps {
				now := t0.Add(s.at)
				switch {
				case s.retryAfter > 0:
					h.retryAfter(t0.Add(s.retryAfter))
				case s.refuse:
					h.refuse(now, "401", "upload.write_key")
				case s.resume:
					h.resume()
				case s.probeNow:
					h.probeNow(now)
				}
			}
			wait, path, ok := h.check(t0.Add(tt.at), tt.head)
			if wait != tt.wait || path != tt.path || ok != tt.ok {
				t.Fatalf("check = %s, %s, %v; want %s, %s, %v", wait, path, ok, tt.wait, tt.path, tt.ok)
			}
		})
	}
}

func TestHold_RefusalsWarnAtTheStartThenOncePerPeriod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var h hold
	tests := []struct {
		at          time.Duration
		began, warn bool
	}{
		{0, true, true},
		{time.Second, false, false},
		{authProbeInterval, false, true},
		{authProbeInterval + time.Second, false, false},
	}
	for _, tt := range tests {
		if began, warn := h.refuse(t0.Add(tt.at), "403", "upload.headers"); began != tt.began || warn != tt.warn {
			t.Fatalf("refusal at +%s: began %v, warn %v; want %v, %v", tt.at, began, warn, tt.began, tt.warn)
		}
	}
	if since, was := h.resume(); !was || !since.Equal(t0) {
		t.Fatalf("resume = %s, %v; want the first refusal's time", since, was)
	}
	if _, was := h.resume(); was || h.probeNow(t0) {
		t.Fatal("a second resume or a probeNow without a hold did something")
	}
}
