package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLineProgress_AtMostOneLinePerSecond_NoRatesNoCarriageReturns(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newFlushProgress(&out, false, func() time.Time { return clock })
	left := int64(38170)
	for i := 0; i < 11; i++ { // polls every 200ms for 2s
		p.update(38170, left)
		left -= 1500
		clock = clock.Add(200 * time.Millisecond)
	}
	p.end(left)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"flush: 0 of 38170 events uploaded, 38170 left",
		"flush: 7500 of 38170 events uploaded, 30670 left",
		"flush: 15000 of 38170 events uploaded, 23170 left",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	if strings.ContainsAny(out.String(), "\r\x1b") || strings.Contains(out.String(), "/s") {
		t.Errorf("plain output has control characters or a rate: %q", out.String())
	}
}

func TestLineProgress_NothingChanged_NoNewLine(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newFlushProgress(&out, false, func() time.Time { return clock })
	for i := 0; i < 5; i++ {
		p.update(100, 40)
		clock = clock.Add(time.Second)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Errorf("%d lines for an unchanged queue, want 1:\n%s", n, out.String())
	}
}

// The bar counts from where the flush was when it appeared, so the events uploaded before it
// existed are not a burst at its first instant (the bogus "179985601 events/s").
func TestBarProgress_CountsFromWhenItAppeared(t *testing.T) {
	var out bytes.Buffer
	p := newFlushProgress(&out, true, time.Now).(*barProgress)
	p.update(38170, 36670) // 1500 uploaded during the first poll
	st := p.bar.State()
	if st.Max != 36670 || st.CurrentNum != 0 {
		t.Fatalf("bar at first sight: %d/%d, want 0/36670", st.CurrentNum, st.Max)
	}
	p.update(38170, 30000)
	if st := p.bar.State(); st.CurrentNum != 6670 {
		t.Errorf("bar after 6670 more: %d, want 6670", st.CurrentNum)
	}
	p.update(40000, 31000) // events arrived meanwhile: the bar grows
	if st := p.bar.State(); st.Max != 38500 || st.CurrentNum != 7500 {
		t.Errorf("bar after more events arrived: %d/%d, want 7500/38500", st.CurrentNum, st.Max)
	}
	p.end(0)
}
