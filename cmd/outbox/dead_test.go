package main

import (
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

func TestDead_BadFilterIsAUsageErrorNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown reason lists the reasons", []string{"dead", "list", "--reason", "nope"},
			`--reason "nope": not a dead-letter reason; use one of rejected, too_large, budget_spent`},
		{"a time that is neither RFC 3339 nor a duration", []string{"dead", "replay", "--since", "yesterday"}, `--since "yesterday": not a time`},
		{"since not before until", []string{"dead", "purge", "--since", "1h", "--until", "2h"}, `--since "1h": is not before until "2h"`},
		{"a status out of range", []string{"dead", "list", "--status", "42"}, `--status "42": not an HTTP status`},
		{"a source that cannot be a name", []string{"dead", "show", "--source", "Not A Name"}, `--source "Not A Name": not a source name`},
		{"an empty filter", []string{"dead", "purge", "--reason="}, `--reason "": empty`},
		{"IDs and filters together", []string{"dead", "replay", "2bW3yBfXJvJzzHq8d5J2fQ4Zk1a", "--status", "429"}, "either IDs or filters"},
		{"show with neither IDs nor filters", []string{"dead", "show"}, "show needs batch IDs"},
		{"purge with neither IDs, filters nor --all", []string{"dead", "purge"}, "purge deletes for good"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runRoot(t, nil, append(tc.args, "--data-dir", dir)...)
			if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("outbox %v = exit %d, %v (out %q); want exit 2 and %q", tc.args, code, err, out, tc.want)
			}
		})
	}
}

func TestDead_FilteredListOfAnEmptyDirectorySaysNoneMatch(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := runRoot(t, nil, "dead", "list", "--reason", "rejected", "--since", "2h", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "no dead letters match the filters") {
		t.Fatalf("dead list with filters = %q, %v", out, err)
	}
}
