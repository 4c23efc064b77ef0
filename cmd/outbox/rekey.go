package main

import (
	"fmt"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/spf13/cobra"
)

func newRekeyCommand(a *app) *cobra.Command {
	var decrypt bool
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Seal every stored record with the first key (or, --decrypt, none)",
		Long: `Rewrite every queued event and dead letter of a stopped agent's data directory sealed with
the first key of queue.encryption.key_files, so that the older keys, after a rotation, are no
longer needed. With --decrypt it writes them all plain again: then remove
queue.encryption.key_files before starting the agent.

It reads the keys from the configuration (every key a record needs must be there) and checks the
whole file first: a damaged file is refused (run 'outbox recover'), a missing key is named and
nothing is changed (exit 2). Records are rewritten a few thousand per transaction, so a crash
leaves a file that opens with the same keys; run rekey again to finish. The file is then
compacted, so that no page keeps a record in its old form.

The agent must be stopped.`,
		Example: `  outbox rekey --data-dir /var/lib/outbox
  OUTBOX_QUEUE_ENCRYPTION_KEY_FILES=/etc/outbox/new.key,/etc/outbox/old.key outbox rekey
  outbox rekey --decrypt`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, keys, err := stoppedDataDir(a, cmd)
			if err != nil {
				return err
			}
			if keys.Len() == 0 {
				return usageErrorf("rekey needs the keys: set queue.encryption.key_files (env OUTBOX_QUEUE_ENCRYPTION_KEY_FILES); the first seals")
			}
			rep, err := store.Rekey(dir, store.RekeyOptions{Keys: keys, Decrypt: decrypt})
			if err != nil {
				return fmt.Errorf("rekey %s: %w", dir, storeError(err))
			}
			if decrypt {
				fmt.Fprintf(cmd.OutOrStdout(), "rekey %s: %d record(s) written plain, %d already plain; remove queue.encryption.key_files before starting the agent\n",
					dir, rep.Rewritten, rep.Kept)
				return nil
			}
			first, _ := keys.Sealing()
			fmt.Fprintf(cmd.OutOrStdout(), "rekey %s: %d record(s) sealed with key %s, %d already were; keys after the first are no longer needed\n",
				dir, rep.Rewritten, first.ID, rep.Kept)
			return nil
		},
	}
	cmd.Flags().BoolVar(&decrypt, "decrypt", false, "write every record plain (turning encryption off)")
	return cmd
}
