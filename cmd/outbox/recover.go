package main

import (
	"fmt"
	"io"

	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/spf13/cobra"
)

func newRecoverCommand(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Salvage a corrupt queue file into a fresh one",
		Long: `Repair a data directory whose queue file is corrupt (the agent refuses to start and its
message names this command). recover never deletes anything: it moves the old file aside inside
the data directory as <name>.corrupt-<UTC time>, copies every readable event and dead letter,
in order, into a fresh file, and prints how many it saved and how many records were unreadable
(a record whose checksum fails is never uploaded) and how many pages it had to skip. Then start
the agent again.

What it does with each kind of damage: a damaged page of events (random bytes, zeros) is
skipped and every event on the other pages is saved; a record whose bytes changed fails its
checksum and is counted unreadable; a damaged meta page (the file's header) is passed over for
the other one, and the newest commit is still looked for; a truncated file keeps every page
before the cut; a file with no readable header at all is scanned page by page. When the tree
could not be followed, events already uploaded may come back (collectors deduplicate on
messageId). It exits 1 only when it could not write the fresh file (and then changes nothing).

A file that passes the full check (the file's structure and every record's checksum) is left as
it is; --force rebuilds it anyway.

With encryption at rest (queue.encryption.key_files), recover takes the same keys from the
configuration: a sealed record whose tag fails is damaged and counted unreadable, salvaged
records stay sealed, and a file holding records sealed with a key that is not configured is not
touched (exit 2, naming the key id).

The agent must be stopped. Once you are satisfied, delete the .corrupt- file yourself.`,
		Example: `  outbox recover --data-dir /var/lib/outbox
  outbox recover --data-dir /var/lib/outbox --force`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, keys, err := stoppedDataDir(a, cmd)
			if err != nil {
				return err
			}
			rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: force, Keys: keys})
			if err != nil {
				return fmt.Errorf("recover %s: %w", dir, storeError(err))
			}
			printRecoverReport(cmd.OutOrStdout(), dir, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "rebuild the file even when it passes the full check")
	return cmd
}

// printRecoverReport says what fsck.RecoverWith did, and what was lost where it can tell.
func printRecoverReport(out io.Writer, dir string, rep fsck.Report) {
	if rep.Healthy && rep.MovedTo == "" {
		fmt.Fprintf(out, "the data file in %s passed the full check (%d queued event(s), %d dead-letter batch(es)): nothing to recover, nothing was changed; --force rebuilds it anyway\n",
			dir, rep.StoredEvents, rep.StoredDeadBatches)
		return
	}
	fmt.Fprintf(out, "recovered %s: saved %d queued event(s) and %d dead-letter batch(es); %d record(s) unreadable, %d page(s) skipped\n",
		dir, rep.Saved, rep.DeadSaved, rep.BadRecords, rep.BadPages)
	if rep.BadPages > 0 {
		fmt.Fprintln(out, "a skipped page may have held several events: how many is not known")
	}
	if rep.StoredEvents > int64(rep.Saved) {
		fmt.Fprintf(out, "the file counted %d queued event(s): at least %d could not be read\n", rep.StoredEvents, rep.StoredEvents-int64(rep.Saved))
	}
	if rep.MissingBytes > 0 {
		fmt.Fprintf(out, "the file was truncated: %d byte(s) missing\n", rep.MissingBytes)
	}
	if rep.BadPages > 0 && !rep.Scanned {
		fmt.Fprintln(out, "the pages the file's tree no longer reaches were read as well: events already uploaded may be sent again (collectors deduplicate on messageId)")
	}
	if rep.Scanned {
		fmt.Fprintln(out, "the file's tree was unreadable, so every page was scanned: events already uploaded may be sent again (collectors deduplicate on messageId)")
	}
	fmt.Fprintf(out, "the old file was moved to %s (nothing was deleted); start the agent again with 'outbox run'\n", rep.MovedTo)
}
