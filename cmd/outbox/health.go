package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type healthOptions struct {
	agent   string
	ready   bool
	timeout time.Duration
}

func newHealthCommand(a *app) *cobra.Command {
	o := &healthOptions{}
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a running agent's health or readiness (for exec probes)",
		Long: `Ask a running agent whether it is up (GET /healthz) or, with --ready, whether it can take
events (GET /readyz: the store is open and writable, the queue is not full, it is not shutting
down; a collector outage does not make it unready). Exit code 0 when the agent answers 200;
1 otherwise, with the reason ("not ready: queue is full", "cannot reach the agent ...").

It is meant for probes that run inside the agent's own network namespace, such as Kubernetes
exec probes: the kubelet's httpGet probes come from the node, so they cannot reach an agent
that listens on the pod's loopback (127.0.0.1). The manifests in docs/deploy/kubernetes/
listen on the pod IP with ingest auth and use httpGet probes on /readyz and /healthz; an agent
kept on loopback takes 'outbox health [--ready]' as an exec probe instead.

The agent is --agent URL, else http:// + ingest.listen from the configuration (0.0.0.0 and
[::] become 127.0.0.1). /healthz and /readyz need no credential.`,
		Example: `  outbox health                      # liveness: is the agent up?
  outbox health --ready              # readiness: can it persist events now?
  outbox health --ready --config /etc/outbox/config.yaml
  outbox health --agent http://127.0.0.1:9000 --timeout 1s`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	addAgentFlag(cmd, &o.agent)
	cmd.Flags().BoolVar(&o.ready, "ready", false, "check readiness (GET /readyz) instead of liveness (GET /healthz)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Second, "how long to wait for the agent's answer")
	return cmd
}

func (o *healthOptions) run(a *app, cmd *cobra.Command) error {
	if o.timeout <= 0 {
		return usageErrorf("--timeout %s must be greater than zero", o.timeout)
	}
	c, _, err := a.newAgentClient(cmd, o.agent)
	if err != nil {
		return err
	}
	path, what := "/healthz", "healthy"
	if o.ready {
		path, what = "/readyz", "ready"
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	err = c.do(ctx, "GET", path, nil, nil)
	var ae *agentError
	switch {
	case err == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "%s: the agent at %s answered 200\n", what, c.base)
		return nil
	case errors.As(err, &ae):
		var body struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal([]byte(ae.Message), &body) == nil && body.Reason != "" {
			return fmt.Errorf("not %s: %s (the agent at %s answered %d on %s)", what, body.Reason, c.base, ae.Status, path)
		}
		return fmt.Errorf("not %s: %w", what, err)
	default:
		return fmt.Errorf("not %s: %w", what, err)
	}
}
