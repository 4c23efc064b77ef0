package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// A per-name section (sources.<name>.*) has one row per key in the table, its key holding the
// placeholder "<name>". A concrete key (sources.app-a.endpoint) is that row bound to a name:
// the file sets it as sources: {app-a: {endpoint: …}}, the environment as
// OUTBOX_SOURCES_APP_A_ENDPOINT (the name upper case, '-' as '_'; a name with '_' is set
// through the file only, as a variable cannot tell its '_' from '-'), and `outbox config`
// shows one line per configured name. Every loop over the table goes through boundKeys, so a
// row added to a section is loaded, shown, validated and reloaded without more code.

// namePlaceholder stands for the name in a per-name row's key.
const namePlaceholder = "<name>"

// boundKey is one concrete key: a fixed row, or a per-name row bound to a name.
type boundKey struct {
	d    *keyDef
	key  string // the concrete key
	name string // "" for a fixed row
}

// ptr is the key's field in c (creating the name's section for a per-name row).
func (b boundKey) ptr(c *Config) any {
	if b.d.named != nil {
		return b.d.named(c, b.name)
	}
	return b.d.field(c)
}

// sectionPrefix is the part of a per-name row's key before the name ("sources.").
func (d *keyDef) sectionPrefix() string {
	prefix, _, _ := strings.Cut(d.key, namePlaceholder)
	return prefix
}

// bind is row d bound to name.
func (d *keyDef) bind(name string) boundKey {
	return boundKey{d: d, key: strings.Replace(d.key, namePlaceholder, name, 1), name: name}
}

// names returns the names c configures in the per-name section of prefix, sorted.
func names(c *Config, prefix string) []string {
	switch prefix {
	case "sources.":
		return slices.Sorted(maps.Keys(c.Sources.Named))
	}
	return nil
}

// namedSource is the configuration of source name in c, created when absent.
func (c *Config) namedSource(name string) *uploader.SourceConfig {
	if c.Sources.Named == nil {
		c.Sources.Named = map[string]*uploader.SourceConfig{}
	}
	s := c.Sources.Named[name]
	if s == nil {
		s = &uploader.SourceConfig{}
		c.Sources.Named[name] = s
	}
	return s
}

// boundKeys returns every concrete key of c in the table's order, a per-name section's keys
// grouped by name: at the section's first row, each name c configures with every row of the
// section (sources.a.write_keys, sources.a.endpoint, …, sources.b.write_keys, …).
func boundKeys(c *Config) []boundKey {
	out := make([]boundKey, 0, len(keys))
	done := map[string]bool{}
	for i := range keys {
		d := &keys[i]
		if d.named == nil {
			out = append(out, boundKey{d: d, key: d.key})
			continue
		}
		prefix := d.sectionPrefix()
		if done[prefix] {
			continue
		}
		done[prefix] = true
		for _, n := range names(c, prefix) {
			for j := i; j < len(keys); j++ {
				if r := &keys[j]; r.named != nil && r.sectionPrefix() == prefix {
					out = append(out, r.bind(n))
				}
			}
		}
	}
	return out
}

// lookupBound returns the concrete key key: a fixed row, or a per-name row bound to the name
// key holds in its place (a fixed row of the same section wins: sources.relay is not a source).
func lookupBound(key string) (boundKey, bool) {
	for i := range keys {
		if d := &keys[i]; d.named == nil && d.key == key {
			return boundKey{d: d, key: key}, true
		}
	}
	for i := range keys {
		d := &keys[i]
		if d.named == nil {
			continue
		}
		prefix, suffix, _ := strings.Cut(d.key, namePlaceholder)
		if name, ok := strings.CutPrefix(key, prefix); ok {
			if name, ok = strings.CutSuffix(name, suffix); ok && name != "" && !strings.Contains(name, ".") {
				return d.bind(name), true
			}
		}
	}
	return boundKey{}, false
}

// lookupKey returns the row of key (fixed or per-name), or nil when no such key exists.
func lookupKey(key string) *keyDef {
	if b, ok := lookupBound(key); ok {
		return b.d
	}
	return nil
}

// lookupEnv returns the concrete key the environment variable name sets through a per-name
// row (OUTBOX_SOURCES_APP_A_ENDPOINT → sources.app-a.endpoint), false when it sets none.
func lookupEnv(name string) (boundKey, bool) {
	for i := range keys {
		d := &keys[i]
		if d.named == nil {
			continue
		}
		prefix, suffix, _ := strings.Cut(d.key, namePlaceholder)
		envPre, envSuf := envName(prefix), strings.ToUpper(strings.ReplaceAll(suffix, ".", "_"))
		rest, ok := strings.CutPrefix(name, envPre)
		if !ok {
			continue
		}
		if n, ok := strings.CutSuffix(rest, envSuf); ok && n != "" {
			return d.bind(strings.ReplaceAll(strings.ToLower(n), "_", "-")), true
		}
	}
	return boundKey{}, false
}

// fileNames returns the names the file's keys (viper's flattened ones) give to the per-name
// section of d, sorted: sources.app-a.endpoint names app-a; a fixed key of the section
// (sources.relay) names none.
func fileNames(d *keyDef, fileKeys []string) []string {
	prefix := d.sectionPrefix()
	seen := map[string]bool{}
	for _, k := range fileKeys {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		name, _, nested := strings.Cut(rest, ".")
		if nested && lookupKey(prefix+name) == nil {
			seen[name] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// namedMapKey reports whether k is an entry of a per-name row's mapping as viper flattens it
// (sources.app-a.headers.x-region).
func namedMapKey(k string) bool {
	for i := range keys {
		d := &keys[i]
		if d.named == nil || d.kind != kindMap {
			continue
		}
		prefix, suffix, _ := strings.Cut(d.key, namePlaceholder)
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if name, entry, ok := strings.Cut(rest, suffix+"."); ok && name != "" && !strings.Contains(name, ".") && entry != "" {
				return true
			}
		}
	}
	return false
}
