package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/config"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/spf13/cobra"
)

// reloadPoll is how often `outbox reload` reads the agent's status while it waits for the result.
const reloadPoll = 100 * time.Millisecond

type reloadOptions struct {
	agent string
	wait  time.Duration
}

func newReloadCommand(a *app) *cobra.Command {
	o := &reloadOptions{}
	cmd := &cobra.Command{
		Use:   "reload",
		Short: "Make the running agent re-read its configuration, and print the result",
		Long: `Send SIGHUP to the agent that runs on the data directory (data_dir, from --data-dir or the
configuration; the pid comes from the directory's lock file), then wait until its status
(GET /v1/status) shows the new reload and print its result:
  applied   every change took effect
  partial   the keys that change live took effect; the others keep their old values until a
            restart (each is named, with the reason)
  rejected  the new configuration is invalid: nothing changed, the agent runs on

The agent re-reads the file and its own environment (fixed at its start) exactly as at start.
Live keys:
` + liveKeyList() + `
The TLS certificates are re-read as well. Every other key needs a restart.
'systemctl reload outbox' and 'kill -HUP <pid>' do the same without the wait.

The configuration is checked here first with the same code as 'outbox config': when it does not
validate, the agent is not signalled and the error is printed (exit code 2).

Exit codes: 0 applied or partial; 1 when no agent runs on the data directory, it cannot be
signalled, or its result did not show within --wait; 2 when the configuration is invalid
(here, or as the agent read it).`,
		Example: `  outbox reload --config /etc/outbox/config.yaml
  outbox reload --data-dir /var/lib/outbox --wait 30s
  outbox reload --wait 0   # signal only`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	addAgentFlag(cmd, &o.agent)
	cmd.Flags().DurationVar(&o.wait, "wait", 10*time.Second, "how long to wait for the agent's result; 0 signals without waiting")
	return cmd
}

func (o *reloadOptions) run(a *app, cmd *cobra.Command) error {
	if o.wait < 0 {
		return usageErrorf("--wait %s must not be negative", o.wait)
	}
	if _, err := a.load(cmd); err != nil {
		return usageErrorf("%w; the agent was not signalled (it would reject this configuration the same way) and runs on", err)
	}
	c, lc, err := a.newAgentClient(cmd, o.agent)
	if err != nil {
		return err
	}
	dir := lc.Config.DataDir
	pid, err := store.Owner(dir)
	if errors.Is(err, errs.ErrNotOwned) {
		return fmt.Errorf("no outbox agent runs on data directory %s (%w); start one with 'outbox run', or name the agent's with --data-dir or --config", dir, err)
	}
	if err != nil {
		return fmt.Errorf("cannot find the agent of data directory %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.wait+time.Second)
	defer cancel()
	// The reload to wait for is the first one after the current; when the status cannot be
	// read now (the new file may change the credentials this command sends), the first one
	// stamped at or after the signal.
	var before agent.Status
	beforeErr := c.do(ctx, "GET", "/v1/status", nil, &before)
	sent := time.Now().UTC().Truncate(time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		hint := ""
		if errors.Is(err, syscall.EPERM) {
			hint = "; run this as the agent's user (or with sudo), or use 'systemctl reload outbox'"
		}
		return fmt.Errorf("cannot signal the agent of data directory %s (pid %d): %w%s", dir, pid, err, hint)
	}
	out := cmd.OutOrStdout()
	if o.wait == 0 {
		fmt.Fprintf(out, "sent SIGHUP to the agent of %s (pid %d); its log and 'outbox status' show the result\n", dir, pid)
		return nil
	}
	newer := func(r *agent.ReloadStatus) bool {
		if r == nil {
			return false
		}
		if beforeErr == nil {
			return before.Reload == nil || r.Seq > before.Reload.Seq
		}
		return !r.At.Before(sent)
	}
	var lastErr error
	for {
		var st agent.Status
		if lastErr = c.do(ctx, "GET", "/v1/status", nil, &st); lastErr == nil && newer(st.Reload) {
			printReload(out, pid, st.Reload)
			if st.Reload.Result == agent.ReloadRejected {
				return usageErrorf("the agent rejected the new configuration and runs on with the previous one: %s", st.Reload.Message)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			why := "its status shows no newer reload"
			if lastErr != nil {
				why = lastErr.Error()
			}
			return fmt.Errorf("sent SIGHUP to the agent of %s (pid %d), but its result did not show within --wait %s (%s); see the agent's log", dir, pid, o.wait, why)
		case <-time.After(reloadPoll):
		}
	}
}

// liveKeyList is the live keys of the key table, wrapped for help text.
func liveKeyList() string {
	var b strings.Builder
	line := " "
	for _, key := range config.LiveKeys() {
		if len(line)+len(key)+2 > 96 {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = " "
		}
		line += " " + key + ","
	}
	b.WriteString(strings.TrimSuffix(line, ","))
	return b.String()
}

// printReload writes the result of a reload as `outbox reload` shows it.
func printReload(w io.Writer, pid int, r *agent.ReloadStatus) {
	fmt.Fprintf(w, "agent (pid %d) reload: %s\n", pid, r.Result)
	if len(r.Applied) > 0 {
		fmt.Fprintf(w, "  applied:        %s\n", strings.Join(r.Applied, ", "))
	}
	if len(r.RestartNeeded) > 0 {
		fmt.Fprintf(w, "  restart needed: %s\n", strings.Join(r.RestartNeeded, ", "))
	}
	if r.Message != "" {
		fmt.Fprintf(w, "  %s\n", r.Message)
	}
}

// reloadSummary is the last reload in one line, for `outbox status`.
func reloadSummary(r *agent.ReloadStatus) string {
	at := r.At
	s := clock(&at) + " → " + r.Result
	switch {
	case len(r.RestartNeeded) > 0:
		s += "; restart to apply " + strings.Join(r.RestartNeeded, ", ")
	case r.Result == agent.ReloadRejected:
		s += ": " + r.Message
	}
	return s
}
