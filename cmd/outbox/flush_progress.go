package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// flushLineEvery is the least time between two plain progress lines of `outbox flush` when its
// output is not a terminal (a log file, a CI job, a pipe).
const flushLineEvery = time.Second

// flushProgress shows how far a flush has come: update is called after every status poll with
// the events known queued at the start (total, which grows when events arrive meanwhile) and
// the events left; end is called once when the flush is over.
type flushProgress interface {
	update(total, left int64)
	end(left int64)
}

// newFlushProgress picks the display: a progress bar on a terminal, plain lines otherwise.
func newFlushProgress(w io.Writer, terminal bool, now func() time.Time) flushProgress {
	if terminal {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w, now: now, every: flushLineEvery}
}

// barProgress draws a progress bar of the events uploaded since the bar appeared. Counting from
// there (not from the flush's start, which came one poll earlier) keeps the bar's rate and ETA
// honest: otherwise the events uploaded before the bar existed would count as done in its
// first microsecond ("1500/38170, 179985601 events/s").
type barProgress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar // nil until the first update
	base int64                    // events already uploaded when the bar appeared
	max  int64
}

func (p *barProgress) update(total, left int64) {
	done := total - left
	if p.bar == nil {
		p.base, p.max = done, left
		if p.max <= 0 {
			return
		}
		p.bar = progressbar.NewOptions64(p.max,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("uploading"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("events"),
			progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
		return
	}
	if m := total - p.base; m > p.max {
		p.max = m
		p.bar.ChangeMax64(m)
	}
	_ = p.bar.Set64(done - p.base)
}

func (p *barProgress) end(left int64) {
	if p.bar == nil {
		return
	}
	if left == 0 {
		_ = p.bar.Finish()
		return
	}
	_ = p.bar.Exit()
	fmt.Fprintln(p.w)
}

// lineProgress prints a plain line ("flush: 1500 of 38170 events uploaded, 36670 left") at most
// once per every, and none when nothing changed; no carriage returns, no rates.
type lineProgress struct {
	w     io.Writer
	now   func() time.Time
	every time.Duration
	last  time.Time // when the last line was printed; zero before the first
	shown int64     // events left in the last line
	begun bool      // a line was printed
}

func (p *lineProgress) update(total, left int64) {
	t := p.now()
	if p.begun && (t.Sub(p.last) < p.every || left == p.shown) {
		return
	}
	p.begun, p.last, p.shown = true, t, left
	fmt.Fprintf(p.w, "flush: %d of %d events uploaded, %d left\n", total-left, total, left)
}

func (p *lineProgress) end(int64) {}
