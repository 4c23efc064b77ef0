package config

import (
	"log/slog"
	"strings"
)

// UnknownEnv is an OUTBOX_* variable that names no configuration key. It is reported, never
// fatal: Kubernetes puts OUTBOX_PORT, OUTBOX_SERVICE_HOST, OUTBOX_PORT_8089_TCP... into every pod
// of a namespace with a Service named outbox, and a shell may carry an unrelated OUTBOX_SRC, so
// refusing them would stop the agent for nothing. Nearest keeps a misspelt key visible.
type UnknownEnv struct {
	Name    string // the variable, e.g. OUTBOX_UPLOAD_WRTIE_KEY
	Nearest string // the closest real variable when one is close ("" otherwise)
}

// noteUnknownEnv records name as an unknown variable, with its nearest real key.
func (lc *Loaded) noteUnknownEnv(name string) {
	lc.UnknownEnv = append(lc.UnknownEnv, UnknownEnv{Name: name, Nearest: nearestEnvName(name)})
}

// WarnUnknownEnv logs each unknown variable once, at warn. The value is never logged: it may be
// a secret under a misspelt name.
func (lc *Loaded) WarnUnknownEnv(log *slog.Logger) {
	for _, u := range lc.UnknownEnv {
		attrs := []any{"variable", u.Name}
		if u.Nearest != "" {
			attrs = append(attrs, "did_you_mean", u.Nearest)
		}
		log.Warn("environment variable is not a configuration key; ignored", attrs...)
	}
}

// nearestEnvName is the configuration variable closest to name by edit distance (adjacent
// transpositions count as one edit), when it is within a quarter of the name's length after
// OUTBOX_ (at least one edit): OUTBOX_UPLOAD_WRTIE_KEY names OUTBOX_UPLOAD_WRITE_KEY, while
// OUTBOX_PORT or OUTBOX_SERVICE_HOST name nothing.
func nearestEnvName(name string) string {
	suffix := strings.TrimPrefix(name, envPrefix)
	limit := max(1, len(suffix)/4)
	best, bestDist := "", limit+1
	for i := range keys {
		cand := envName(keys[i].key)
		if d := editDistance(suffix, strings.TrimPrefix(cand, envPrefix)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b (Levenshtein plus
// adjacent transpositions), over bytes: configuration names are ASCII.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
