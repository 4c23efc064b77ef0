package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/spf13/cobra"
)

// deadOptions are shared by the dead subcommands.
type deadOptions struct {
	agent string
	all   bool
}

// deadBackend is where dead letters are managed: a running agent, or the data directory offline.
type deadBackend interface {
	list(ctx context.Context) ([]agent.DeadBatch, error)
	get(ctx context.Context, id string) (agent.DeadBatch, error)
	replay(ctx context.Context, ids []string) (int, error) // events re-queued
	purge(ctx context.Context, ids []string) (int, error)  // batches deleted
	close()
}

func newDeadCommand(a *app) *cobra.Command {
	o := &deadOptions{}
	cmd := &cobra.Command{
		Use:   "dead",
		Short: "List, show, replay or purge dead letters",
		Long: `Manage dead letters: batches the collector refused for good (401, 403, a 400 on a single
event, ...) or that ran out of retry budget. Each keeps its reason, last status, attempts and a
snippet of the collector's answer.

By default the commands go through a running agent (--agent, default http:// + ingest.listen).
With --data-dir they open the data directory directly; the agent must then be stopped.

  list              one line per dead batch: id, when, events, reason, status
  show ID           the batch's details and its events, one JSON per line
  replay [ID...]    put batches back at the tail of the queue (all of them with no ID)
  purge ID...|--all delete batches for good`,
		Example: `  outbox dead list
  outbox dead show 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a
  outbox dead replay                      # replay everything, after fixing the write key
  outbox dead purge --all --data-dir /var/lib/outbox`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("dead needs a subcommand: list, show ID, replay [ID...] or purge ID...|--all")
		},
	}
	cmd.PersistentFlags().StringVar(&o.agent, "agent", "", "agent base URL (default http:// + ingest.listen)")
	addClientTLSFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		&cobra.Command{
			Use: "list", Short: "List dead-letter batches", Args: argsUsage(cobra.NoArgs),
			Example: "  outbox dead list\n  outbox dead list --data-dir ./outbox-data",
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
					list, err := b.list(ctx)
					if err != nil {
						return err
					}
					return printDeadList(cmd.OutOrStdout(), list)
				})
			},
		},
		&cobra.Command{
			Use: "show ID", Short: "Show one dead-letter batch and its events", Args: argsUsage(cobra.ExactArgs(1)),
			Example: "  outbox dead show 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a",
			RunE: func(cmd *cobra.Command, args []string) error {
				return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
					d, err := b.get(ctx, args[0])
					if err != nil {
						return err
					}
					printDead(cmd.OutOrStdout(), d)
					return nil
				})
			},
		},
		&cobra.Command{
			Use: "replay [ID...]", Short: "Put dead batches back in the queue (all with no ID)",
			Example: "  outbox dead replay\n  outbox dead replay 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a",
			RunE: func(cmd *cobra.Command, args []string) error {
				return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
					n, err := b.replay(ctx, args)
					if err != nil {
						return err
					}
					what := "every dead batch"
					if len(args) > 0 {
						what = fmt.Sprintf("%d batch(es)", len(args))
					}
					fmt.Fprintf(cmd.OutOrStdout(), "replayed %s: %d event(s) are back at the tail of the queue\n", what, n)
					return nil
				})
			},
		},
		o.purgeCommand(a),
	)
	return cmd
}

func (o *deadOptions) purgeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "purge ID...|--all", Short: "Delete dead batches for good",
		Example: "  outbox dead purge 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a\n  outbox dead purge --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !o.all {
				return usageErrorf("purge deletes for good: name the batch IDs ('outbox dead list'), or pass --all")
			}
			if len(args) > 0 && o.all {
				return usageErrorf("pass either IDs or --all, not both")
			}
			return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
				n, err := b.purge(ctx, args)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "purged %d dead batch(es)\n", n)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&o.all, "all", false, "purge every dead batch")
	return cmd
}

// with runs fn against the agent, or offline when --data-dir was given.
func (o *deadOptions) with(a *app, cmd *cobra.Command, fn func(context.Context, deadBackend) error) error {
	var b deadBackend
	if f := cmd.Flags().Lookup("data-dir"); f != nil && f.Changed {
		lc, err := a.load(cmd)
		if err != nil {
			return err
		}
		q, err := openOffline(&lc.Config)
		if err != nil {
			return err
		}
		b = offlineDead{o: q}
	} else {
		c, _, err := a.newAgentClient(cmd, o.agent)
		if err != nil {
			return err
		}
		b = agentDead{c: c}
	}
	defer b.close()
	ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout)
	defer cancel()
	return fn(ctx, b)
}

func printDeadList(w io.Writer, list []agent.DeadBatch) error {
	if len(list) == 0 {
		fmt.Fprintln(w, "no dead letters")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEAD SINCE\tEVENTS\tBYTES\tREASON\tSTATUS\tATTEMPTS")
	for _, d := range list {
		status := "-"
		if d.Status != 0 {
			status = fmt.Sprint(d.Status)
		} else if d.ErrorClass != "" {
			status = d.ErrorClass
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\n", d.ID, d.At.Local().Format(time.DateTime), d.Events, humanBytes(d.Bytes), orDash(d.Reason), status, d.Attempts)
	}
	return tw.Flush()
}

func printDead(w io.Writer, d agent.DeadBatch) {
	fmt.Fprintf(w, "id:        %s\ndead since: %s\nreason:    %s\n", d.ID, d.At.Local().Format(time.DateTime), orDash(d.Reason))
	if d.Status != 0 {
		fmt.Fprintf(w, "status:    %d\n", d.Status)
	}
	if d.ErrorClass != "" {
		fmt.Fprintf(w, "error:     %s\n", d.ErrorClass)
	}
	fmt.Fprintf(w, "attempts:  %d\nevents:    %d (%s)\n", d.Attempts, d.Events, humanBytes(d.Bytes))
	if d.Response != "" {
		fmt.Fprintf(w, "response:  %s\n", strings.TrimSpace(d.Response))
	}
	for _, e := range d.Batch {
		fmt.Fprintln(w, strings.TrimSpace(string(e)))
	}
}

// offlineDead manages dead letters in a stopped agent's data directory.
// It converts with agent.NewDeadBatch, so both paths print the same.
type offlineDead struct{ o *uploader.Offline }

func (o offlineDead) close() { _ = o.o.Close() }

func (o offlineDead) list(context.Context) ([]agent.DeadBatch, error) {
	list, err := o.o.DeadLetters().List()
	out := make([]agent.DeadBatch, 0, len(list))
	for _, d := range list {
		out = append(out, agent.NewDeadBatch(d))
	}
	return out, err
}

func (o offlineDead) get(_ context.Context, id string) (agent.DeadBatch, error) {
	d, err := o.o.DeadLetters().Get(id)
	if errors.Is(err, errs.ErrNotFound) {
		return agent.DeadBatch{}, fmt.Errorf("%w; see 'outbox dead list' for the IDs", err)
	}
	return agent.NewDeadBatch(d), err
}

func (o offlineDead) replay(ctx context.Context, ids []string) (int, error) {
	return o.o.DeadLetters().Replay(ctx, ids...)
}

func (o offlineDead) purge(ctx context.Context, ids []string) (int, error) {
	return o.o.DeadLetters().Purge(ctx, ids...)
}
