package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
)

// usageError marks an error as the user's to fix before anything runs: a bad flag, a wrong number
// of arguments, an unknown or invalid configuration key. main maps it to exit code 2; every other
// error is a runtime failure (exit code 1), except a damaged data file (exit code 3).
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
	exitRuntime = 1 // runtime failure: locked data dir, unreachable agent, failed serving, ...
	// exitUsage: a usage or configuration error, and a data directory the process has no
	// permission on (it runs as the wrong user: restarting does not help).
	exitUsage = 2
	// exitDamaged: the data file failed its check (a *store.CorruptError, at open or found later),
	// or it is a symbolic link outbox refuses to follow. It has a code of its own because, like a
	// configuration error, restarting does not help: `outbox recover`, or replacing the link with
	// the file, does. Supervisors use it to stop restarting (systemd's RestartPreventExitStatus=2 3).
	exitDamaged = 3
)

// exitCode maps the error a command returned to the process exit code.
func exitCode(err error) int {
	var ue *usageError
	var ce *store.CorruptError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.Is(err, errs.ErrKeyMissing), errors.Is(err, errs.ErrDataDirPermission):
		// A missing key, or a data directory the process may not use, is the configuration's
		// to fix, like a bad value: restarting does not help.
		return exitUsage
	case errors.As(err, &ce), errors.Is(err, errs.ErrUnsafeDataFile):
		return exitDamaged
	default:
		return exitRuntime
	}
}

// storeError returns the store's own message for a locked or corrupt data directory (it names
// the fix: stop the other process, or `outbox recover`), without the wrapping layers above it.
// A locked directory's message also names the flag that picks another one, which a library
// user does not have.
func storeError(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*store.CorruptError); ok {
			return e
		}
		if errors.Unwrap(e) == errs.ErrLocked {
			return &lockedError{e}
		}
	}
	return err
}

// lockedError is the store's errs.ErrLocked message with the command line's way to another
// directory.
type lockedError struct{ err error }

func (l *lockedError) Error() string {
	const fix = "use another data directory"
	msg := l.err.Error()
	if strings.Contains(msg, fix) {
		return strings.Replace(msg, fix, fix+" (--data-dir)", 1)
	}
	return msg + " (another data directory: --data-dir)"
}

func (l *lockedError) Unwrap() error { return l.err }
