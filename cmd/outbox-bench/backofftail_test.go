package main

import (
	"testing"
	"time"
)

func TestBackoffTail_TheUnluckiestBatchDecidesAShortRun(t *testing.T) {
	cases := []struct {
		name     string
		m        backoffTail
		min, max float64
	}{
		{"no failures read the local rate", backoffTail{batches: 400, span: 2 * time.Second, p: 0, draws: 50, seed: 1}, 1, 1},
		{"20% failures over 2 s read well below 0.6", backoffTail{batches: 400, span: 2 * time.Second, p: 0.2, draws: 500, seed: 1}, 0.25, 0.55},
		{"20% failures over 20 s read above 0.7", backoffTail{batches: 4000, span: 20 * time.Second, p: 0.2, draws: 200, seed: 1}, 0.7, 0.95},
		{"no batches read nothing", backoffTail{span: time.Second, p: 0.2, draws: 10}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.m.ratio(); got < c.min || got > c.max {
				t.Fatalf("ratio %.3f, want within [%.2f, %.2f]", got, c.min, c.max)
			}
		})
	}
}
