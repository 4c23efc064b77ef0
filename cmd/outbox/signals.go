package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// forcedExitGrace is how long past shutdown.timeout `outbox run` waits for the agent's
// shutdown to return before giving up on it, so that the process exits within
// shutdown.timeout + 1 s whatever the collector (or a bug) does.
const forcedExitGrace = 800 * time.Millisecond

// signals is a subscription to SIGINT and SIGTERM.
type signals struct {
	C    <-chan os.Signal
	stop func()
}

// watchSignals subscribes to SIGINT and SIGTERM; call Stop when done.
func (a *app) watchSignals() *signals {
	ch := make(chan os.Signal, 2)
	return &signals{C: ch, stop: a.deps.Notify(ch)}
}

// Stop ends the subscription; signals then get their default behaviour again.
func (s *signals) Stop() { s.stop() }

// gracefulStop is the shutdown sequence after the first signal: stop runs with a context that
// ends after timeout, or at once when a second signal arrives (stop must then close the store
// cleanly and return). If stop has not returned by timeout + forcedExitGrace, gracefulStop
// returns an error without it (the process then exits; bbolt's file is safe against that).
func gracefulStop(log *slog.Logger, sigs <-chan os.Signal, timeout time.Duration, stop func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stop(ctx) }()
	hard := time.NewTimer(timeout + forcedExitGrace)
	defer hard.Stop()
	for {
		select {
		case err := <-done:
			return err
		case sig := <-sigs:
			log.Warn("second signal: stopping now; what is not uploaded stays on disk", "signal", sig.String())
			cancel()
		case <-hard.C:
			return fmt.Errorf("shutdown did not finish within shutdown.timeout (%s); exiting anyway, queued events stay on disk", timeout)
		}
	}
}
