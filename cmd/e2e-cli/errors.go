package main

import "errors"

// errUsage is wrapped by a command-line error (no --input, an unknown flag): exit code 2.
var errUsage = errors.New("usage")

// errBadInput is wrapped by an --input document that cannot be run: exit code 1.
var errBadInput = errors.New("bad input")

// errDeadline is wrapped when the run ended at the --timeout deadline with events undelivered.
var errDeadline = errors.New("deadline reached")

// Exit codes: 0 when every event was delivered, 1 for a failed run or bad input, 2 for usage.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)
