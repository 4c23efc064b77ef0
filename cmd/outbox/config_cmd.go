package main

import (
	"github.com/outboxhq/outbox/pkg/config"
	"github.com/spf13/cobra"
)

func newConfigCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print the configuration outbox would run with: every key, its value and its source
(default, file <path>, env OUTBOX_..., or flag --...). Secrets are redacted: upload.write_key,
upload.kafka.sasl.password, ingest.write_keys, ingest.token, admin.token, and upload.headers values that
carry credentials (Authorization, Cookie, *-Key, *Token*, *Secret*).

It checks the configuration through the same code as "outbox run" (the uploader's and the
agent's own rules included), so an unknown key or an invalid value is reported here too (exit
code 2), naming the key and its source; a rule between two keys names both.

Sizes print in bytes; in the file or environment they accept KB, MB, GB (powers of 1000) and
KiB, MiB, GiB (powers of 1024). Durations are Go durations (500ms, 30s, 12h).

Keys (environment: OUTBOX_ + key in upper case with "." as "_"):
` + config.KeyReference(),
		Example: `  outbox config
  outbox config --config /etc/outbox/config.yaml
  OUTBOX_BATCH_INTERVAL=1s outbox config --listen 127.0.0.1:9000`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lc, err := a.load(cmd)
			if err != nil {
				return err
			}
			return config.Print(cmd.OutOrStdout(), lc)
		},
	}
}
