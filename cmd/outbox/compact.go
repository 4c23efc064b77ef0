package main

import (
	"fmt"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/spf13/cobra"
)

func newCompactCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Shrink a stopped agent's queue file to its live data",
		Long: `Rewrite the queue file of a stopped agent so that it holds only live data. bbolt never
shrinks its file on its own; the agent already compacts when the queue has drained and the file
is much larger than its contents, so this is only needed on demand (for example after a long
outage filled the disk). Queued events and dead letters are kept, in order.

The agent must be stopped (it owns the directory while it runs).`,
		Example: `  outbox compact --data-dir /var/lib/outbox`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, keys, err := stoppedDataDir(a, cmd)
			if err != nil {
				return err
			}
			before, after, err := store.Compact(dir, keys)
			if err != nil {
				return fmt.Errorf("compact %s: %w", dir, storeError(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %s: %s → %s\n", dir, humanBytes(before), humanBytes(after))
			return nil
		},
	}
}
