package main

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/spf13/cobra"
)

// flushPoll is how often `outbox flush` refreshes its progress bar from /v1/status.
const flushPoll = 200 * time.Millisecond

type flushOptions struct {
	agent string
	wait  time.Duration
}

func newFlushCommand(a *app) *cobra.Command {
	o := &flushOptions{}
	cmd := &cobra.Command{
		Use:   "flush",
		Short: "Upload everything queued now, with a progress bar of events left",
		Long: `Tell a running agent to upload now, without waiting for batch.interval (POST /v1/flush),
and show a progress bar of the events left in the queue until it is empty or --wait runs out.

Exit code 0 when the queue emptied. When the collector is failing, the agent stops at its retry
budget instead of hammering it: flush then says what it waits for (for example "waiting for
Retry-After until 12:03:04") and exits 1; the events stay queued and go out on their own.`,
		Example: `  outbox flush
  outbox flush --wait 2m
  outbox flush --agent http://127.0.0.1:9000`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	addAgentFlag(cmd, &o.agent)
	cmd.Flags().DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for the queue to empty")
	return cmd
}

func (o *flushOptions) run(a *app, cmd *cobra.Command) error {
	if o.wait <= 0 {
		return usageErrorf("--wait %s must be greater than zero", o.wait)
	}
	c, _, err := a.newAgentClient(cmd, o.agent)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.wait+5*time.Second)
	defer cancel()
	var st agent.Status
	if err := c.do(ctx, "GET", "/v1/status", nil, &st); err != nil {
		return err
	}
	total := st.Queue.Events
	out := cmd.OutOrStdout()
	if total == 0 {
		fmt.Fprintln(out, "queue is empty; nothing to flush")
		return nil
	}
	done := make(chan error, 1)
	var res agent.FlushResult // written by the goroutine before done
	go func() { done <- c.do(ctx, "POST", "/v1/flush?wait="+o.wait.String(), nil, &res) }()
	tick := time.NewTicker(flushPoll)
	defer tick.Stop()
	var (
		flushErr error
		progress flushProgress // shown once the flush takes longer than one poll
	)
	for waiting := true; waiting; {
		select {
		case flushErr = <-done:
			waiting = false
		case <-tick.C:
			if progress == nil {
				progress = newFlushProgress(cmd.ErrOrStderr(), a.deps.IsTerminal(cmd.ErrOrStderr()), time.Now)
			}
		}
		if err := c.do(ctx, "GET", "/v1/status", nil, &st); err == nil && progress != nil {
			total = max(total, st.Queue.Events)
			progress.update(total, st.Queue.Events)
		}
	}
	if progress != nil {
		progress.end(st.Queue.Events)
	}
	if st.Queue.Events == 0 {
		fmt.Fprintf(out, "flushed: %d event(s) uploaded, queue is empty\n", total)
		return nil
	}
	if flushErr != nil {
		return fmt.Errorf("not flushed: %w", flushErr)
	}
	if w := res.Waiting; w != nil {
		st.Retry.Path, st.Retry.WaitingUntil = w.Path, &w.Until
		return fmt.Errorf("not flushed: %d event(s) still queued; the agent is %s; they will go out on their own, check 'outbox status'", st.Queue.Events, retryLine(&st))
	}
	if res.Error != "" {
		return fmt.Errorf("not flushed: %d event(s) still queued: %s", st.Queue.Events, res.Error)
	}
	return fmt.Errorf("not flushed: %d event(s) still queued after %s; try a longer --wait, and check 'outbox status'", st.Queue.Events, o.wait)
}
