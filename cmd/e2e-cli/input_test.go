package main_test

import (
	"strings"
	"testing"
)

func TestE2ECLI_BadInputFailsNamingTheField(t *testing.T) {
	t.Parallel()
	ok := func(mod func(obj)) obj {
		in := obj{"writeKey": "wk", "apiHost": "http://127.0.0.1:9", "sequences": []obj{}}
		mod(in)
		return in
	}
	tests := []struct {
		name  string
		input any
		want  string
	}{
		{"input must be JSON", `{"writeKey":`, "invalid JSON"},
		{"input must be an object", `[]`, "input: must be an object"},
		{"writeKey is required", ok(func(in obj) { delete(in, "writeKey") }), "writeKey: required"},
		{"writeKey must be a string", ok(func(in obj) { in["writeKey"] = 7 }), "writeKey: must be a string"},
		{"apiHost must be an http URL", ok(func(in obj) { in["apiHost"] = "ftp://h" }), "apiHost"},
		{"apiHost must have no query", ok(func(in obj) { in["apiHost"] = "http://h?x=1" }), "apiHost"},
		{"sequences are required", ok(func(in obj) { delete(in, "sequences") }), "sequences: required"},
		{"delayMs must not be negative", ok(func(in obj) { in["sequences"] = []obj{seq(-1)} }), "sequences[0].delayMs"},
		{"an event must be an object", ok(func(in obj) { in["sequences"] = []obj{{"events": []any{"x"}}} }), "sequences[0].events[0]"},
		{"flushAt must be positive", ok(func(in obj) { in["config"] = obj{"flushAt": -1} }), "config.flushAt"},
		{"flushAt must be whole", ok(func(in obj) { in["config"] = obj{"flushAt": 2.5} }), "config.flushAt"},
		{"flushInterval must be positive", ok(func(in obj) { in["config"] = obj{"flushInterval": -5} }), "config.flushInterval"},
		{"maxRetries must not be negative", ok(func(in obj) { in["config"] = obj{"maxRetries": -1} }), "config.maxRetries"},
		{"timeout must be positive", ok(func(in obj) { in["config"] = obj{"timeout": -1} }), "config.timeout"},
		{"config must be an object", ok(func(in obj) { in["config"] = 3 }), "config: must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := runCLI(t, tc.input)
			out.wantExit(t, 1, false)
			if !strings.HasPrefix(out.Error, "bad input: ") || !strings.Contains(out.Error, tc.want) {
				t.Errorf("error %q does not name %q", out.Error, tc.want)
			}
		})
	}
}

func TestE2ECLI_UsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	valid := `{"writeKey":"wk","sequences":[]}`
	tests := []struct {
		name string
		args []string
	}{
		{"an unknown flag", []string{"--bogus"}},
		{"a stray argument", []string{"extra"}},
		{"a non-positive --timeout", []string{"--timeout", "0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := runCLI(t, valid, tc.args...)
			out.wantExit(t, 2, false)
		})
	}
	t.Run("an empty --input", func(t *testing.T) {
		t.Parallel()
		out := runCLI(t, "")
		out.wantExit(t, 2, false)
		if !strings.Contains(out.Error, "--input is required") {
			t.Errorf("error %q does not ask for --input", out.Error)
		}
	})
}
