package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const redacted = "<redacted>"

func newConfigCommand(a *app) *cobra.Command {
	var keyList strings.Builder
	def := defaultConfig()
	for i := range keys {
		live := ""
		if keys[i].live {
			live = "; live: a reload applies it"
		}
		fmt.Fprintf(&keyList, "  %-30s %s (default %s%s)\n", keys[i].key, keys[i].help, displayValue(&keys[i], &def), live)
	}
	return &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration and where each value came from",
		Long: `Print the configuration outbox would run with: every key, its value and its source
(default, file <path>, env OUTBOX_..., or flag --...). Secrets are redacted: upload.write_key,
upload.kafka.sasl.password, ingest.write_keys, ingest.token, and upload.headers values that
carry credentials (Authorization, Cookie, *-Key, *Token*, *Secret*).

It checks the configuration through the same code as "outbox run" (the uploader's and the
agent's own rules included), so an unknown key or an invalid value is reported here too (exit
code 2), naming the key and its source; a rule between two keys names both.

Sizes print in bytes; in the file or environment they accept KB, MB, GB (powers of 1000) and
KiB, MiB, GiB (powers of 1024). Durations are Go durations (500ms, 30s, 12h).

Keys (environment: OUTBOX_ + key in upper case with "." as "_"):
` + keyList.String(),
		Example: `  outbox config
  outbox config --config /etc/outbox/config.yaml
  OUTBOX_BATCH_INTERVAL=1s outbox config --listen 127.0.0.1:9000`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lc, err := a.load(cmd)
			if err != nil {
				return err
			}
			return printConfig(cmd.OutOrStdout(), lc)
		},
	}
}

// printConfig writes one line per key: key, value (secrets redacted), source.
func printConfig(w io.Writer, lc *loadedConfig) error {
	file := lc.File
	if file == "" {
		file = "none (defaults, OUTBOX_* variables and flags only)"
	}
	fmt.Fprintf(w, "# configuration file: %s\n", file)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for i := range keys {
		d := &keys[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\n", d.key, displayValue(d, &lc.Config), lc.Sources[d.key])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range lc.UnknownEnv {
		hint := ""
		if u.Nearest != "" {
			hint = "; did you mean " + u.Nearest + "?"
		}
		fmt.Fprintf(w, "# ignored: environment variable %s is not a configuration key%s\n", u.Name, hint)
	}
	return nil
}

// displayValue is the printable value of key d, with secrets redacted.
func displayValue(d *keyDef, c *Config) string {
	switch v := d.field(c).(type) {
	case *string:
		if d.secret && *v != "" {
			return redacted
		}
		if strings.Contains(*v, "://") { // upload.endpoint, and any other URL a key holds
			return strconv.Quote(redactURL(*v))
		}
		return strconv.Quote(*v)
	case *bool:
		return strconv.FormatBool(*v)
	case *int64:
		if d.kind == kindSize {
			return formatSize(*v)
		}
		return strconv.FormatInt(*v, 10)
	case *int:
		if d.kind == kindSize {
			return formatSize(int64(*v))
		}
		return strconv.Itoa(*v)
	case *time.Duration:
		return v.String()
	case *[]string:
		items := make([]string, len(*v))
		for i, s := range *v {
			items[i] = strconv.Quote(s)
			if d.secret {
				items[i] = redacted
			}
		}
		return "[" + strings.Join(items, ", ") + "]"
	case *map[string]string:
		items := make([]string, 0, len(*v))
		for _, name := range sortedKeys(*v) {
			value := strconv.Quote((*v)[name])
			if secretHeader(name) {
				value = redacted
			}
			items = append(items, name+": "+value)
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
	return "?"
}

// secretHeader reports whether a header's value is a credential and must not be printed.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, part := range []string{"token", "secret", "key", "auth", "password", "signature", "credential"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}
