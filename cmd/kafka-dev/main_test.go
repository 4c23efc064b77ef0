package main

import (
	"io"
	"strings"
	"testing"
)

func TestRun_BadFlags_AreRefusedBeforeAnythingStarts(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-brokers", "0"}, "-brokers must be at least 1"},
		{[]string{"-no-such-flag"}, "not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%v) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}
