package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

type inspectOptions struct{ sample int }

func newInspectCommand(a *app) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show a stopped agent's queue: counts, bytes, oldest event, a sample",
		Long: `Open the data directory of a stopped agent and describe what is in it: queued events and
their bytes, the intake time of the oldest, the retry state of the head batch, dead letters,
the file size, and the first few events as stored.

The agent must be stopped: a running agent owns the directory (use 'outbox status' then).
The data directory is --data-dir, else data_dir from the configuration.`,
		Example: `  outbox inspect --data-dir /var/lib/outbox
  outbox inspect --data-dir ./outbox-data --sample 10`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	cmd.Flags().IntVar(&o.sample, "sample", 3, "how many of the oldest events to print")
	return cmd
}

func (o *inspectOptions) run(a *app, cmd *cobra.Command) error {
	lc, err := a.load(cmd)
	if err != nil {
		return err
	}
	q, err := openOffline(&lc.Config)
	if err != nil {
		return err
	}
	defer q.Close()
	st := q.Stats()
	out := cmd.OutOrStdout()
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "data directory\t%s\n", lc.Config.DataDir)
	fmt.Fprintf(tw, "file\t%s, sync %s\n", humanBytes(st.Store.FileBytes), st.Store.Sync)
	fmt.Fprintf(tw, "queued\t%d events, %s\n", st.Queue.Events, humanBytes(st.Queue.Bytes))
	if st.Queue.Events > 0 {
		oldest := time.Now().Add(-st.Queue.OldestAge)
		fmt.Fprintf(tw, "oldest\t%s (%s ago)\n", oldest.Local().Format(time.DateTime), st.Queue.OldestAge.Round(time.Second))
	}
	fmt.Fprintf(tw, "dead letters\t%d batches, %d events, %s\n", st.Dead.Batches, st.Dead.Events, humanBytes(st.Dead.Bytes))
	var sample [][]byte
	if o.sample > 0 && st.Queue.Events > 0 {
		h, err := q.Head(o.sample)
		if err != nil {
			return fmt.Errorf("reading the head of the queue: %w", err)
		}
		if h.Attempts > 0 {
			fmt.Fprintf(tw, "head batch\t%d events, %d attempts so far, %d counted retries\n", len(h.Events), h.Attempts, h.Retries)
		}
		sample = h.Events
		if len(sample) > o.sample {
			sample = sample[:o.sample]
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(sample) > 0 {
		fmt.Fprintf(out, "\noldest %d event(s):\n", len(sample))
		for _, ev := range sample {
			fmt.Fprintln(out, "  "+strings.TrimSpace(string(ev)))
		}
	}
	return nil
}
