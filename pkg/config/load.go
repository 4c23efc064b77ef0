package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// defaultConfigFile is read when --config is not given and the file exists.
const defaultConfigFile = "outbox.yaml"

// envPrefix starts every configuration environment variable: OUTBOX_ + the key in upper case with
// "." as "_" (upload.write_key → OUTBOX_UPLOAD_WRITE_KEY).
const envPrefix = "OUTBOX_"

// Source says where a configuration value came from.
type Source struct {
	Kind string // "default", "file", "env" or "flag"
	Name string // the file path, variable name or flag name; empty for a default
}

// String is how errors and `outbox config` name the source: "file ./outbox.yaml",
// "env OUTBOX_BATCH_INTERVAL", "flag --listen", "default".
func (s Source) String() string {
	switch s.Kind {
	case "flag":
		return "flag --" + s.Name
	case "default":
		return "default"
	}
	return s.Kind + " " + s.Name
}

// Loaded is a Config with the source of every key's value.
type Loaded struct {
	Config  Config
	Sources map[string]Source
	File    string // the file read, "" when none
	// UnknownEnv lists the OUTBOX_* variables that name no key (env_unknown.go), in name order.
	UnknownEnv []UnknownEnv
}

// Input is what Load reads besides the file itself.
type Input struct {
	File    string         // --config; "" means ./outbox.yaml when it exists
	Environ []string       // KEY=value pairs; only OUTBOX_* ones are read
	Flags   *pflag.FlagSet // flags of the running command; only changed ones count
}

// envName is the environment variable of a key.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load layers defaults, the YAML file, OUTBOX_* variables and flags (each beating the
// ones before), then validates the result. Every error names the key and the source of the bad
// value, and is the user's to fix before anything runs (the binary exits 2 on it).
func Load(in Input) (*Loaded, error) {
	lc := &Loaded{Config: Default(), Sources: make(map[string]Source, len(keys))}
	for _, b := range boundKeys(&lc.Config) {
		lc.Sources[b.key] = Source{Kind: "default"}
	}
	if err := lc.readFile(in.File); err != nil {
		return nil, err
	}
	if err := lc.readEnv(in.Environ); err != nil {
		return nil, err
	}
	if err := lc.readFlags(in.Flags); err != nil {
		return nil, err
	}
	for _, b := range boundKeys(&lc.Config) { // a named section's keys left unset
		if _, ok := lc.Sources[b.key]; !ok {
			lc.Sources[b.key] = Source{Kind: "default"}
		}
	}
	if err := lc.validate(); err != nil {
		return nil, err
	}
	return lc, nil
}

// set parses raw for key b and stores it, recording src.
func (lc *Loaded) set(b boundKey, raw any, src Source) error {
	v, err := parseValue(b.d, raw)
	if err != nil {
		return keyError(b.key, src, err)
	}
	switch p := b.ptr(&lc.Config).(type) {
	case *string:
		*p = v.(string)
	case *bool:
		*p = v.(bool)
	case *int64:
		*p = v.(int64)
	case *int:
		*p = int(v.(int64))
	case *time.Duration:
		*p = v.(time.Duration)
	case *[]string:
		*p = v.([]string)
	case *map[string]string:
		*p = v.(map[string]string)
	}
	lc.Sources[b.key] = src
	return nil
}

// keyError is the one shape of a configuration error: key, source, what is wrong.
func keyError(key string, src Source, err error) error {
	return fmt.Errorf("configuration key %s (from %s): %w", key, src, err)
}

func (lc *Loaded) readFile(path string) error {
	if path == "" {
		if _, err := os.Stat(defaultConfigFile); err != nil {
			return nil // no file: defaults, env and flags only
		}
		path = "./" + defaultConfigFile
	}
	v := viper.New()
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config file %s does not exist; check --config, or run without it to use defaults", path)
		}
		return fmt.Errorf("config file %s cannot be read: %w; fix the YAML (see config.example.yaml)", path, err)
	}
	lc.File = path
	src := Source{Kind: "file", Name: path}
	var unknown []string
	for _, k := range v.AllKeys() {
		if lookupKey(k) == nil && !strings.HasPrefix(k, "upload.headers.") && !namedMapKey(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config file %s: unknown configuration key %s; see config.example.yaml for every key", path, strings.Join(unknown, ", "))
	}
	for i := range keys {
		d := &keys[i]
		bound := []boundKey{{d: d, key: d.key}}
		if d.named != nil {
			bound = bound[:0]
			for _, n := range fileNames(d, v.AllKeys()) {
				bound = append(bound, d.bind(n))
			}
		}
		for _, b := range bound {
			if !v.IsSet(b.key) {
				continue
			}
			if err := lc.set(b, v.Get(b.key), src); err != nil {
				return err
			}
		}
	}
	return nil
}

func (lc *Loaded) readEnv(environ []string) error {
	byEnv := make(map[string]*keyDef, len(keys))
	for i := range keys {
		byEnv[envName(keys[i].key)] = &keys[i]
	}
	sorted := append([]string(nil), environ...)
	sort.Strings(sorted)
	for _, kv := range sorted {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || value == "" {
			continue // an empty variable counts as unset
		}
		b, ok := lookupEnv(name)
		if d := byEnv[name]; d != nil && d.named == nil { // a fixed key wins: OUTBOX_SOURCES_RELAY_ENDPOINT
			b, ok = boundKey{d: d, key: d.key}, true
		}
		if !ok {
			lc.noteUnknownEnv(name) // reported, never fatal (env_unknown.go)
			continue
		}
		if err := lc.set(b, value, Source{Kind: "env", Name: name}); err != nil {
			return err
		}
	}
	return nil
}

func (lc *Loaded) readFlags(fs *pflag.FlagSet) error {
	if fs == nil {
		return nil
	}
	for i := range keys {
		d := &keys[i]
		if d.flag == "" {
			continue
		}
		if f := fs.Lookup(d.flag); f != nil && f.Changed {
			if err := lc.set(boundKey{d: d, key: d.key}, f.Value.String(), Source{Kind: "flag", Name: d.flag}); err != nil {
				return err
			}
		}
	}
	return nil
}
