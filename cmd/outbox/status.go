package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/spf13/cobra"
)

type statusOptions struct {
	agent string
	json  bool
}

func newStatusCommand(a *app) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a running agent's queue, dead letters, uploads and retry state",
		Long: `Ask a running agent for its status (GET /v1/status) and print it as a table:
  queue         events waiting, their bytes, the age of the oldest
  dead letters  batches the collector refused for good or that ran out of retry budget
  last upload   the last attempt and its result, the last success, and since when uploads fail
  retry         what the worker waits for ("waiting for Retry-After until 12:03:04")
  delivery      shown only when paused: the collector refuses our credentials, and what to fix
  store         size of the queue file on disk and the fsync policy
  last reload   when the configuration was last reloaded and the result (see 'outbox reload')
  source NAME   with several sources, one row each: queued events and bytes, the oldest's age,
                dead letters and the last delivery (a relay source is named relay-<hash>, never its key)
--json prints the agent's JSON unchanged, for scripts.`,
		Example: `  outbox status
  outbox status --json | jq .queue.events
  outbox status --agent http://127.0.0.1:9000`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	addAgentFlag(cmd, &o.agent)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the status as JSON")
	return cmd
}

func (o *statusOptions) run(a *app, cmd *cobra.Command) error {
	c, _, err := a.newAgentClient(cmd, o.agent)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout)
	defer cancel()
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/v1/status", nil, &raw); err != nil {
		return err
	}
	if o.json {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			buf.Reset()
			buf.Write(raw)
		}
		fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(buf.String()))
		return nil
	}
	var st agent.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("the agent's status is not the expected JSON (%w); try --json", err)
	}
	return printStatus(cmd.OutOrStdout(), &st, c.base)
}

// printStatus renders st as the readable table of `outbox status`.
func printStatus(w io.Writer, st *agent.Status, base string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("agent", fmt.Sprintf("%s (version %s)", base, orDash(st.Version)))
	if ap := st.AuthPause; ap.Paused {
		row("delivery", fmt.Sprintf("PAUSED since %s: %s; the queue is kept, next probe at %s",
			clock(ap.Since), ap.Message, orDash(clock(ap.NextProbe))))
	}

	q := fmt.Sprintf("%d events, %s", st.Queue.Events, humanBytes(st.Queue.Bytes))
	if st.Queue.Events > 0 {
		q += fmt.Sprintf(", oldest %s old", (time.Duration(st.Queue.OldestAgeSeconds * float64(time.Second))).Round(time.Second))
	}
	row("queue", q)

	d := fmt.Sprintf("%d batches, %d events, %s", st.Dead.Batches, st.Dead.Events, humanBytes(st.Dead.Bytes))
	if st.Dead.Batches > 0 {
		d += " (see 'outbox dead list')"
	}
	row("dead letters", d)

	last := "none yet"
	if st.Upload.LastAttempt != nil {
		last = clock(st.Upload.LastAttempt)
		if st.Upload.LastResult != "" {
			last += " → " + st.Upload.LastResult
		}
	}
	if st.Destination != "" {
		row("destination", st.Destination)
	}
	row("last upload", last)
	row("last success", orDash(clock(st.Upload.LastSuccess)))
	if st.Upload.FailingSince != nil {
		row("failing since", clock(st.Upload.FailingSince))
	}
	row("in flight", fmt.Sprintf("%d batches (limit %d)", st.Upload.InFlight, st.Upload.Concurrency))
	row("retry", retryLine(st))
	row("store", fmt.Sprintf("%s on disk, sync %s", humanBytes(st.Store.FileBytes), orDash(st.Store.Sync)))
	if st.Reload != nil {
		row("last reload", reloadSummary(st.Reload))
	}
	for _, src := range st.Sources {
		row("source "+src.Name, sourceLine(src))
	}
	return tw.Flush()
}

// sourceLine describes one source's row of `outbox status`.
func sourceLine(s agent.SourceStatus) string {
	line := fmt.Sprintf("%d events, %s", s.Events, humanBytes(s.Bytes))
	if s.Events > 0 {
		line += fmt.Sprintf(", oldest %s old", (time.Duration(s.OldestAge * float64(time.Second))).Round(time.Second))
	}
	if s.DeadBatches > 0 {
		line += fmt.Sprintf("; %d dead batches (%d events)", s.DeadBatches, s.DeadEvents)
	}
	if s.InFlight > 0 {
		line += fmt.Sprintf("; %d in flight", s.InFlight)
	}
	line += "; last success " + orDash(clock(s.LastSuccess))
	if s.Paused {
		line += "; " + pausedLine(s)
	}
	if s.Relay {
		line += " (relay)"
	}
	if s.Removed {
		line += " (removed by a reload: draining with its last settings)"
	}
	return line
}

// pausedLine says why a source's delivery is paused, in words.
func pausedLine(s agent.SourceStatus) string {
	until := clock(s.PausedUntil)
	switch s.PausedReason {
	case "retry_after":
		line := "PAUSED: the collector asked to wait (Retry-After)"
		if until != "" {
			line += " until " + until
		}
		return line
	case "auth_refused":
		line := fmt.Sprintf("PAUSED: credentials refused (%s): fix %s", s.PausedCode, s.PausedKey)
		if until != "" {
			line += ", next probe at " + until
		}
		return line
	case "breaker_open":
		line := "PAUSED: its endpoint is failing, probing one batch at a time"
		if until != "" {
			line += ", next probe at " + until
		}
		return line
	}
	return "PAUSED: " + s.PausedReason
}

// retryLine describes the worker's retry state in words.
func retryLine(st *agent.Status) string {
	until := clock(st.Retry.WaitingUntil)
	switch st.Retry.Path {
	case "rate_limit":
		s := "waiting for Retry-After"
		if until != "" {
			s += " until " + until
		}
		return s + fmt.Sprintf(" (attempt %d)", st.Retry.Attempt)
	case "backoff":
		s := "backing off after a failure"
		if until != "" {
			s += ", next attempt at " + until
		}
		return s + fmt.Sprintf(" (attempt %d)", st.Retry.Attempt)
	case "auth":
		s := "held on refused credentials"
		if until != "" {
			s += ", next probe at " + until
		}
		return s + " (no retry budget spent)"
	}
	return "not waiting"
}

// clock shows a time as local wall-clock time ("12:03:04", with the date when it is not
// today); nil is "".
func clock(p *time.Time) string {
	if p == nil || p.IsZero() {
		return ""
	}
	t := p.Local()
	if y, m, d := t.Date(); y == time.Now().Year() && m == time.Now().Month() && d == time.Now().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// humanBytes prints n in binary units ("1.5 MiB").
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
