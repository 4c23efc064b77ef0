package main

import (
	"fmt"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/spf13/cobra"
)

func newRecoverCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Salvage a corrupt queue file into a fresh one",
		Long: `Repair a data directory whose queue file is corrupt (the agent refuses to start and its
message names this command). recover never deletes anything: it moves the old file aside inside
the data directory as <name>.corrupt-<UTC time>, copies every readable event and dead letter,
in order, into a fresh file, and prints how many it saved and how many records were unreadable
(a record whose checksum fails is never uploaded). Then start the agent again.

The agent must be stopped. Once you are satisfied, delete the .corrupt- file yourself.`,
		Example: `  outbox recover --data-dir /var/lib/outbox`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lc, err := a.load(cmd)
			if err != nil {
				return err
			}
			dir := lc.Config.DataDir
			if err := checkDataDir(dir); err != nil {
				return err
			}
			rep, err := store.Recover(dir)
			if err != nil {
				return fmt.Errorf("recover %s: %w", dir, storeError(err))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "recovered %s: saved %d queued event(s) and %d dead-letter batch(es); %d record(s) unreadable\n",
				dir, rep.Saved, rep.DeadSaved, rep.Unreadable)
			fmt.Fprintf(out, "the old file was moved to %s (nothing was deleted); start the agent again with 'outbox run'\n", rep.MovedTo)
			return nil
		},
	}
}
