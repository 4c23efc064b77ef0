package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
)

func TestGracefulStop_SecondSignalCutsTheShutdownShort(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	started := make(chan struct{})
	stop := func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // a last upload pass that would last the whole timeout
		return ctx.Err()
	}
	errc := make(chan error, 1)
	go func() { errc <- gracefulStop(slog.New(slog.NewTextHandler(io.Discard, nil)), sigs, time.Hour, stop) }()
	<-started
	sigs <- syscall.SIGINT
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("gracefulStop = %v, want the stop function's context cancelled by the second signal", err)
	}
}

func TestGracefulStop_ReturnsWhatStopReturns(t *testing.T) {
	want := errors.New("close failed")
	err := gracefulStop(slog.New(slog.DiscardHandler), make(chan os.Signal), time.Hour, func(context.Context) error { return want })
	if !errors.Is(err, want) {
		t.Fatalf("gracefulStop = %v, want %v", err, want)
	}
}

func TestExitCode_MapsUsageErrorsTo2DamageTo3AndOthersTo1(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"no error is 0", nil, 0},
		{"a usage error is 2", usageErrorf("bad flag"), 2},
		{"a wrapped usage error is still 2", errors.Join(errors.New("x"), usageErrorf("bad key")), 2},
		{"a damaged data file is 3", &store.CorruptError{Path: "/d/outbox.db", Err: errors.New("bad page")}, 3},
		{"a wrapped damaged data file is still 3", fmt.Errorf("open: %w", &store.CorruptError{Err: errors.New("x")}), 3},
		{"anything else is 1", errors.New("data directory in use"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Fatalf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}
