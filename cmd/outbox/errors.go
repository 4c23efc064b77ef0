package main

import (
	"errors"
	"fmt"
)

// usageError marks an error as the user's to fix before anything runs: a bad flag, a wrong number
// of arguments, an unknown or invalid configuration key. main maps it to exit code 2; every other
// error is a runtime failure (exit code 1).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf builds a usageError; %w in format wraps as with fmt.Errorf.
func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// Exit codes of the outbox binary (docs/CONTRACT.md, "Exit codes").
const (
	exitOK      = 0 // success
	exitRuntime = 1 // runtime failure: locked or corrupt data dir, unreachable agent, ...
	exitUsage   = 2 // usage or configuration error
)

// exitCode maps the error a command returned to the process exit code.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	default:
		return exitRuntime
	}
}
