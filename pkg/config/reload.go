package config

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Reloader applies a new configuration to the running agent on SIGHUP (and `outbox reload`).
// It loads the file, the environment and the flags through Load, exactly as at start,
// so that a configuration `outbox config` rejects is rejected here with the same message.
// The keys the key table marks live are handed to the packages (uploader.Client.Reconfigure,
// agent.Agent.Reconfigure, the log level); every other changed key keeps its old value and is
// logged with the table's reason. The outcome goes to agent.RecordReload.
type Reloader struct {
	load   func() (*Loaded, error)
	log    *slog.Logger
	level  *slog.LevelVar
	client *uploader.Client
	agent  *agent.Agent

	mu     sync.Mutex // one reload at a time; guards the fields below
	loaded Config     // as loaded: the start's values, with the live keys of every reload since
	inUse  Config     // what runs: loaded, with run's own overrides (--dev)
}

// Current returns the configuration in use.
func (r *Reloader) Current() Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inUse
}

// changes lists the keys whose value differs between a and b, split by the key table into
// those applied live and those that need a restart.
func changes(a, b *Config) (live, restart []string) {
	// Copies whose per-name sections reading may create: a and b stay as they are. A name
	// configured on one side only shows as each of its keys having changed.
	ca, cb := *a, *b
	ca.Sources.Named, cb.Sources.Named = maps.Clone(a.Sources.Named), maps.Clone(b.Sources.Named)
	seen := map[string]bool{}
	for _, k := range append(boundKeys(&ca), boundKeys(&cb)...) {
		if seen[k.key] {
			continue
		}
		seen[k.key] = true
		va, vb := reflect.ValueOf(k.ptr(&ca)).Elem(), reflect.ValueOf(k.ptr(&cb)).Elem()
		inA, inB := namedIn(a, k), namedIn(b, k)
		if inA == inB && reflect.DeepEqual(va.Interface(), vb.Interface()) {
			continue
		}
		// A name added or removed changes its keys that need a restart only where it sets
		// them: a source added without a Kafka topic of its own goes to upload.kafka.topic.
		if !k.d.live && inA != inB && va.IsZero() && vb.IsZero() {
			continue
		}
		if k.d.live {
			live = append(live, k.key)
		} else {
			restart = append(restart, k.key)
		}
	}
	return live, restart
}

// namedIn reports whether c configures the name of k, a per-name key; true for a fixed key.
func namedIn(c *Config, k boundKey) bool {
	return k.d.named == nil || slices.Contains(names(c, k.d.sectionPrefix()), k.name)
}

// withKeys returns c with the values of the named keys taken from src. A per-name key of a
// name src does not configure removes that name from c (a source removed by a reload). c's
// sources are copied first: the Config c was copied from keeps its own.
func withKeys(c Config, src *Config, names []string) Config {
	c.Sources.Named = cloneNamed(c.Sources.Named)
	for _, k := range names {
		b, _ := lookupBound(k)
		if !namedIn(src, b) {
			delete(c.Sources.Named, b.name)
			continue
		}
		reflect.ValueOf(b.ptr(&c)).Elem().Set(reflect.ValueOf(b.ptr(src)).Elem())
	}
	return c
}

// cloneNamed is a copy of the named sources that a change to one of its sources leaves the
// original alone.
func cloneNamed(m map[string]*uploader.SourceConfig) map[string]*uploader.SourceConfig {
	if m == nil {
		return nil
	}
	out := make(map[string]*uploader.SourceConfig, len(m))
	for name, s := range m {
		cp := uploader.SourceConfig{}
		if s != nil {
			cp = *s
		}
		out[name] = &cp
	}
	return out
}

// Reload re-reads the configuration and applies what can change live. It never stops the
// agent: a configuration that does not load or validate changes nothing. The result is also
// handed to agent.Agent.RecordReload.
func (r *Reloader) Reload() agent.Reload {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.apply()
	switch res.Result {
	case agent.ReloadRejected:
		r.log.Error("configuration reload rejected; running on with the previous configuration", "err", res.Message)
	case agent.ReloadPartial:
		r.log.Warn("configuration reloaded in part", "applied", strings.Join(res.Applied, ","),
			"restart_needed", strings.Join(res.Restart, ","), "message", res.Message)
	default:
		r.log.Info("configuration reloaded", "applied", strings.Join(res.Applied, ","), "message", res.Message)
	}
	r.agent.RecordReload(res)
	return res
}

func (r *Reloader) apply() agent.Reload {
	lc, err := r.load()
	if err != nil {
		return agent.Reload{Result: agent.ReloadRejected, Message: err.Error()}
	}
	live, restart := changes(&r.loaded, &lc.Config)
	next := withKeys(r.inUse, &lc.Config, live)
	// The live keys with the kept ones may break a rule between keys (batch.max_bytes must
	// hold an event of the limits.max_event_bytes still in use): the same check as at start.
	checked := &Loaded{Config: next, Sources: lc.Sources}
	if err := checked.validate(); err != nil {
		return agent.Reload{Result: agent.ReloadRejected,
			Message: fmt.Sprintf("%v (with the values kept until a restart: %s)", err, strings.Join(restart, ", "))}
	}
	if !reflect.DeepEqual(next.UploaderConfig(), r.inUse.UploaderConfig()) {
		if err := r.client.Reconfigure(next.UploaderConfig()); err != nil {
			return agent.Reload{Result: agent.ReloadRejected, Message: err.Error()}
		}
	}
	if err := r.agent.Reconfigure(next.AgentConfig(r.log)); err != nil {
		return agent.Reload{Result: agent.ReloadRejected, Message: err.Error()} // validated above; kept for safety
	}
	if lvl, ok := ParseLevel(next.Log.Level); ok {
		r.level.Set(lvl)
	}
	r.loaded, r.inUse = withKeys(r.loaded, &lc.Config, live), next

	res := agent.Reload{Result: agent.ReloadApplied, Applied: live, Restart: restart}
	var notes []string
	for _, k := range restart {
		why := lookupKey(k).restart
		r.log.Warn("configuration key changed; it keeps its old value until the agent restarts", "key", k, "source", lc.Sources[k].String(), "reason", why)
		notes = append(notes, fmt.Sprintf("%s (from %s) needs a restart: %s", k, lc.Sources[k], why))
	}
	var infos []string
	if len(live) == 0 && len(restart) == 0 {
		infos = append(infos, "no configuration change")
	}
	if err := r.client.ReloadSuppressList(); err != nil {
		notes = append(notes, fmt.Sprintf("suppress list not re-read, the previous one applies: %v", err))
	} else if next.Privacy.SuppressFile != "" {
		infos = append(infos, "suppress list re-read")
	}
	if err := r.agent.ReloadTLS(); err != nil {
		notes = append(notes, fmt.Sprintf("TLS certificates not reloaded, the previous ones are served: %v", err))
	} else if next.Agent.TLS.Enabled() {
		infos = append(infos, "TLS certificates re-read")
	}
	if len(notes) > 0 {
		res.Result, res.Message = agent.ReloadPartial, strings.Join(notes, "; ")
	} else {
		res.Message = strings.Join(infos, "; ")
	}
	return res
}

// ParseLevel parses a log.level value (validated by Load).
func ParseLevel(s string) (slog.Level, bool) {
	var l slog.Level
	return l, l.UnmarshalText([]byte(s)) == nil
}

// NewReloader is the Reloader of a running agent: load reads the configuration as at start
// (Load with the process's file, environment and flags); loaded is the configuration as loaded
// at start, inUse the one running (loaded with the command's own overrides); level is the
// logger's level, client and ag the running uploader and agent.
func NewReloader(load func() (*Loaded, error), loaded, inUse Config, log *slog.Logger, level *slog.LevelVar,
	client *uploader.Client, ag *agent.Agent) *Reloader {
	return &Reloader{load: load, log: log, level: level,
		client: client, agent: ag, loaded: loaded, inUse: inUse}
}
