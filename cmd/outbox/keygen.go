package main

import (
	"fmt"

	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/spf13/cobra"
)

func newKeygenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen FILE",
		Short: "Write a new key file for encryption at rest",
		Long: `Write FILE with 32 random bytes, mode 0600: a key for queue.encryption.key_files. It never
replaces an existing file (a lost key loses every record it sealed). It prints the key's id, the
name errors and 'outbox inspect' give it; the key itself is never printed.

To turn encryption on, set queue.encryption.key_files to the file and restart the agent: the
records already queued are sealed at start. To rotate, put a new key first and keep the old one
after it: new records are sealed with the new key, the old ones still open; once the queue has
drained (or after 'outbox rekey'), the old key can go.`,
		Example: `  outbox keygen /etc/outbox/queue.key`,
		Args:    argsUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := keyring.Generate(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote key %s to %s (mode 0600); keep a copy: what it seals cannot be read without it\n", id, args[0])
			return nil
		},
	}
}
