package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/spf13/cobra"
)

// deadOptions are shared by the dead subcommands.
type deadOptions struct {
	agent string
	all   bool
	// filter holds the filter flags (--source, --since, ...) by name, as given.
	filter map[string]*string
}

// deadBackend is where dead letters are managed: a running agent, or the data directory offline.
// A zero filter matches every batch.
type deadBackend interface {
	list(ctx context.Context, f uploader.DeadFilter) ([]agent.DeadBatch, error)
	get(ctx context.Context, id string) (agent.DeadBatch, error)
	replay(ctx context.Context, ids []string) (int, error) // events re-queued
	replayMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error)
	purge(ctx context.Context, ids []string) (int, error) // batches deleted
	purgeMatching(ctx context.Context, f uploader.DeadFilter) (uploader.DeadResult, error)
	close()
}

// deadFilterHelp says what each filter flag takes.
func deadFilterHelp() map[string]string {
	return map[string]string{
		"source": "only the dead batches of source `NAME`",
		"since":  "only those dead-lettered at or after `WHEN`: an RFC 3339 time or a duration ago (2h, 7d)",
		"until":  "only those dead-lettered before `WHEN` (as --since)",
		"status": "only those whose last answer was `CODE`: an HTTP status (429), a Kafka error name (NOT_ENOUGH_REPLICAS) or a network error class (maybe_sent)",
		"reason": "only those dead-lettered for `REASON`: " + strings.Join(uploader.DeadReasons(), ", "),
	}
}

func newDeadCommand(a *app) *cobra.Command {
	o := &deadOptions{filter: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "dead",
		Short: "List, show, replay or purge dead letters",
		Long: `Manage dead letters: batches the collector refused for good (a 400 on a single event, a 404,
...) or that ran out of retry budget. Each keeps its source, its reason (rejected, too_large or
budget_spent), the last answer's code, attempts, a snippet of the collector's answer, and how
many times it was replayed before it died this time.

By default the commands go through a running agent (--agent, default http:// + ingest.listen).
With --data-dir they open the data directory directly; the agent must then be stopped.

  list              one line per dead batch: id, when, source, events, reason, status, replays
  show ID...        the batches' details and their events, one JSON per line
  replay [ID...]    put batches back at the tail of their source's queue, every event as it
                    was (its messageId kept); all of them with no ID and no filter
  purge ID...|--all delete batches for good

Filters pick the batches instead of IDs (list, show, replay and purge; not with IDs):
  --source NAME     the batches of one source
  --since WHEN      dead-lettered at or after WHEN: an RFC 3339 time or a duration ago (2h, 7d)
  --until WHEN      dead-lettered before WHEN
  --status CODE     the last answer: an HTTP status (429, 500), a Kafka error name
                    (NOT_ENOUGH_REPLICAS) or a network error class (never_sent, maybe_sent)
  --reason REASON   rejected, too_large or budget_spent
Filters combine: a batch must match every one given. Times are to the second.`,
		Example: `  outbox dead list
  outbox dead list --reason budget_spent --since 2h
  outbox dead show 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a
  outbox dead replay --status 429 --source checkout   # after a rate-limit storm
  outbox dead replay                                  # replay everything, after fixing the write key
  outbox dead purge --reason rejected --until 7d
  outbox dead purge --all --data-dir /var/lib/outbox`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("dead needs a subcommand: list, show ID..., replay [ID...] or purge ID...|--all, each with filters (see 'outbox dead --help')")
		},
	}
	cmd.PersistentFlags().StringVar(&o.agent, "agent", "", "agent base URL (default http:// + ingest.listen)")
	help := deadFilterHelp()
	for _, name := range uploader.DeadFilterFields() {
		o.filter[name] = cmd.PersistentFlags().String(name, "", help[name])
	}
	addClientTLSFlags(cmd.PersistentFlags())
	cmd.AddCommand(o.listCommand(a), o.showCommand(a), o.replayCommand(a), o.purgeCommand(a))
	return cmd
}

// parseFilter reads the filter flags given; a bad value is a usage error naming its flag.
// given reports whether any filter flag was given.
func (o *deadOptions) parseFilter(cmd *cobra.Command) (f uploader.DeadFilter, given bool, err error) {
	text := map[string]string{}
	for name, v := range o.filter {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			text[name] = *v
		}
	}
	f, err = uploader.ParseDeadFilter(text, time.Now())
	var fe *uploader.DeadFilterError
	if errors.As(err, &fe) {
		return f, false, usageErrorf("--%s %q: %s", fe.Field, fe.Value, fe.Reason)
	}
	return f, len(text) > 0, err
}

func (o *deadOptions) listCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "List dead-letter batches (all, or those the filters match)", Args: argsUsage(cobra.NoArgs),
		Example: "  outbox dead list\n  outbox dead list --source checkout --status 429\n  outbox dead list --data-dir ./outbox-data",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, given, err := o.parseFilter(cmd)
			if err != nil {
				return err
			}
			return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
				list, err := b.list(ctx, f)
				if err != nil {
					return err
				}
				return printDeadList(cmd.OutOrStdout(), list, given)
			})
		},
	}
}

func (o *deadOptions) showCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "show ID...", Short: "Show dead-letter batches and their events (by ID, or those the filters match)",
		Example: "  outbox dead show 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a\n  outbox dead show --reason rejected --since 1h",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, given, err := o.parseFilter(cmd)
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0 && !given:
				return usageErrorf("show needs batch IDs ('outbox dead list') or a filter (--source, --since, --until, --status, --reason)")
			case len(args) > 0 && given:
				return usageErrorf("pass either IDs or filters, not both: the filters pick the batches themselves")
			}
			return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
				ids := args
				if given {
					list, err := b.list(ctx, f)
					if err != nil {
						return err
					}
					if len(list) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "no dead letters match the filters")
						return nil
					}
					ids = ids[:0]
					for _, d := range list {
						ids = append(ids, d.ID)
					}
				}
				for i, id := range ids {
					d, err := b.get(ctx, id)
					if err != nil {
						return err
					}
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					printDead(cmd.OutOrStdout(), d)
				}
				return nil
			})
		},
	}
}

func (o *deadOptions) replayCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "replay [ID...]", Short: "Put dead batches back in the queue (by ID, those the filters match, or all)",
		Example: "  outbox dead replay\n  outbox dead replay 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a\n  outbox dead replay --status 429 --since 2h",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, given, err := o.parseFilter(cmd)
			if err != nil {
				return err
			}
			if len(args) > 0 && given {
				return usageErrorf("pass either IDs or filters, not both: the filters pick the batches themselves")
			}
			return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
				out := cmd.OutOrStdout()
				if len(args) > 0 {
					n, err := b.replay(ctx, args)
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "replayed %d batch(es): %d event(s) are back at the tail of the queue\n", len(args), n)
					return nil
				}
				res, err := b.replayMatching(ctx, f)
				if err != nil {
					return err
				}
				what := "every dead batch"
				if given {
					what = "the dead batches matching the filters"
				}
				fmt.Fprintf(out, "replayed %s, %d batch(es): %d event(s) are back at the tail of the queue\n", what, res.Batches, res.Events)
				return nil
			})
		},
	}
}

func (o *deadOptions) purgeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use: "purge ID...|--all", Short: "Delete dead batches for good (by ID, those the filters match, or --all)",
		Example: "  outbox dead purge 2bW3yBfXJvJzzHq8d5J2fQ4Zk1a\n  outbox dead purge --reason rejected --until 7d\n  outbox dead purge --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			f, given, err := o.parseFilter(cmd)
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0 && !o.all && !given:
				return usageErrorf("purge deletes for good: name the batch IDs ('outbox dead list'), give filters (--reason, --since, ...), or pass --all")
			case len(args) > 0 && o.all:
				return usageErrorf("pass either IDs or --all, not both")
			case len(args) > 0 && given:
				return usageErrorf("pass either IDs or filters, not both: the filters pick the batches themselves")
			}
			return o.with(a, cmd, func(ctx context.Context, b deadBackend) error {
				if len(args) > 0 {
					n, err := b.purge(ctx, args)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "purged %d dead batch(es)\n", n)
					return nil
				}
				res, err := b.purgeMatching(ctx, f) // --all, narrowed by the filters given
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "purged %d dead batch(es), %d event(s)\n", res.Batches, res.Events)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&o.all, "all", false, "purge every dead batch (every one the filters match, with filters)")
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
