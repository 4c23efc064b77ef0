package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// DefaultTimeout bounds a whole run (sequences, delivery, retries). It covers the default
// counted-backoff envelope (10 retries from 500 ms doubling to the 60 s cap: about 4 minutes of
// waits), so with default settings a run ends on its real outcome rather than on the deadline.
const DefaultTimeout = 5 * time.Minute

// flags are the command line.
type flags struct {
	input    string
	timeout  time.Duration
	logLevel slog.Level
}

// result is the one JSON line written to stdout.
type result struct {
	Success     bool   `json:"success"`
	SentBatches int    `json:"sentBatches"`
	Error       string `json:"error,omitempty"`
}

// run is the whole command: parse, execute, print one JSON line. It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "e2e-cli:", err)
		writeResult(stdout, result{Error: err.Error()})
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: f.logLevel}))
	in, err := parseInput(f.input)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), errBadInput.Error()+": ")
		log.Error("bad input", "error", msg)
		writeResult(stdout, result{Error: "bad input: " + msg})
		return exitFailure
	}
	res := execute(ctx, in, f.timeout, log)
	writeResult(stdout, res)
	if !res.Success {
		return exitFailure
	}
	return exitOK
}

// parseFlags reads the command line; errors wrap errUsage (flag.ErrHelp for -h).
func parseFlags(args []string, stderr io.Writer) (flags, error) {
	f := flags{timeout: DefaultTimeout}
	fs := flag.NewFlagSet("e2e-cli", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.input, "input", "", "the run as JSON: {writeKey, apiHost, sequences, config} (required)")
	fs.DurationVar(&f.timeout, "timeout", DefaultTimeout, "bound on the whole run; undelivered events at the deadline fail it")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "stderr log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: e2e-cli --input '<json>' [--timeout 5m] [--log-level info]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, err
		}
		return f, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case f.input == "":
		return f, fmt.Errorf("%w: --input is required", errUsage)
	case f.timeout <= 0:
		return f, fmt.Errorf("%w: --timeout %s: must be greater than zero", errUsage, f.timeout)
	}
	return f, nil
}

// writeResult prints r as one JSON line.
func writeResult(w io.Writer, r result) {
	b, err := json.Marshal(r)
	if err != nil { // cannot happen for this struct; keep the one-line contract anyway
		b = []byte(`{"success":false,"sentBatches":0,"error":"encode result"}`)
	}
	b = append(b, '\n')
	_, _ = w.Write(b)
}
