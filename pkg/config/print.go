package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// redacted stands for a secret's value wherever the configuration is shown.
const redacted = "<redacted>"

// KeyReference is every key with its one line of help, its default and whether a reload
// applies it, one key a line in the key table's order: the key list of `outbox config --help`.
func KeyReference() string {
	var keyList strings.Builder
	def := Default()
	for i := range keys {
		d := &keys[i]
		live := ""
		if d.live {
			live = "; live: a reload applies it"
		}
		fmt.Fprintf(&keyList, "  %-30s %s (default %s%s)\n", d.key, d.help, displayValue(d, defaultPtr(d, &def)), live)
	}
	return keyList.String()
}

// LiveKeys are the keys a reload applies to the running agent, in the key table's order; a
// change to any other key needs a restart.
func LiveKeys() []string {
	var live []string
	for i := range keys {
		if keys[i].live {
			live = append(live, keys[i].key)
		}
	}
	return live
}

// Print writes the configuration as `outbox config` shows it: the file read, then one line per
// key, in the key table's order, with its value (secrets redacted) and its source, then the
// OUTBOX_* variables that name no key.
func Print(w io.Writer, lc *Loaded) error {
	file := lc.File
	if file == "" {
		file = "none (defaults, OUTBOX_* variables and flags only)"
	}
	fmt.Fprintf(w, "# configuration file: %s\n", file)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	shown := lc.Config // a copy whose sections the display may create: lc stays as it is
	for _, b := range boundKeys(&shown) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.key, displayValue(b.d, b.ptr(&shown)), lc.Sources[b.key])
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

// defaultPtr is row d's field in def, the defaults: for a per-name row, that of a section
// made afresh (every per-name key's default is its zero value or the section's own).
func defaultPtr(d *keyDef, def *Config) any {
	if d.named != nil {
		scratch := *def
		scratch.Sources.Named = nil
		return d.named(&scratch, "name")
	}
	return d.field(def)
}

// displayValue is the printable value of key d, whose field is p, with secrets redacted.
func displayValue(d *keyDef, p any) string {
	switch v := p.(type) {
	case *string:
		if d.secret && *v != "" {
			return redacted
		}
		if strings.Contains(*v, "://") { // every endpoint key (upload.endpoint, sources.<name>.endpoint), and any other URL a key holds
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
