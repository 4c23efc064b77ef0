package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/spf13/cobra"
)

// forgetOptions are the flags of `outbox forget`.
type forgetOptions struct {
	agent        string
	userIDs      []string
	anonymousIDs []string
	suppress     bool
	unsuppress   bool
	timeout      time.Duration
}

func newForgetCommand(a *app) *cobra.Command {
	o := &forgetOptions{}
	cmd := &cobra.Command{
		Use:   "forget --user-id ID [--anonymous-id ID] [--suppress | --unsuppress]",
		Short: "Delete a user's queued and dead-lettered events",
		Long: `Delete every queued and dead-lettered event of the users named (their userId with
--user-id, their anonymousId with --anonymous-id; both repeat), in one transaction, for a
user who asked to be forgotten: events already uploaded are the collector's to delete.
Batches being sent when the command runs are waited for; once it returns, none of these
events is sent. It prints how many events it removed, per source of events that lost any
("default" when none did), and the agent (or, offline, this command) logs an audit line that names no user:
a keyed hash of each id.

--suppress also adds the ids to privacy.suppress_file: later events of those users are dropped
at intake (answered 200, counted as dropped with reason "suppressed"). --unsuppress takes the
ids off the list again and deletes nothing.

By default the command goes through a running agent (--agent, default http:// + ingest.listen).
With --data-dir it opens the data directory directly; the agent must then be stopped.`,
		Example: `  outbox forget --user-id 42
  outbox forget --user-id 42 --anonymous-id 4f9c... --suppress
  outbox forget --unsuppress --user-id 42
  outbox forget --user-id 42 --data-dir /var/lib/outbox`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			res, err := o.run(ctx, a, cmd)
			if err != nil {
				return err
			}
			return printForget(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.userIDs, "user-id", nil, "userId of a user to forget (repeat for several)")
	f.StringArrayVar(&o.anonymousIDs, "anonymous-id", nil, "anonymousId of a user to forget (repeat for several)")
	f.BoolVar(&o.suppress, "suppress", false, "also drop the users' later events at intake (adds them to privacy.suppress_file)")
	f.BoolVar(&o.unsuppress, "unsuppress", false, "take the ids off privacy.suppress_file instead; deletes nothing")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long (batches being sent are waited for, up to upload.timeout)")
	addAgentFlag(cmd, &o.agent)
	return cmd
}

// validate checks the flags.
func (o *forgetOptions) validate() error {
	switch {
	case len(o.userIDs)+len(o.anonymousIDs) == 0:
		return usageErrorf("name the user: --user-id ID or --anonymous-id ID (each may repeat)")
	case o.suppress && o.unsuppress:
		return usageErrorf("pass either --suppress or --unsuppress, not both")
	case o.timeout <= 0:
		return usageErrorf("--timeout %s must be greater than zero", o.timeout)
	}
	for _, id := range append(append([]string(nil), o.userIDs...), o.anonymousIDs...) {
		if id == "" {
			return usageErrorf("an id is empty; pass each id as it appears in the events")
		}
	}
	return nil
}

// request is the flags as the admin API's request.
func (o *forgetOptions) request() agent.ForgetRequest {
	return agent.ForgetRequest{UserIDs: o.userIDs, AnonymousIDs: o.anonymousIDs, Suppress: o.suppress, Unsuppress: o.unsuppress}
}

// run forgets through the agent, or offline with --data-dir.
func (o *forgetOptions) run(ctx context.Context, a *app, cmd *cobra.Command) (agent.ForgetResult, error) {
	req := o.request()
	if f := cmd.Flags().Lookup("data-dir"); f == nil || !f.Changed {
		c, _, err := a.newAgentClient(cmd, o.agent)
		if err != nil {
			return agent.ForgetResult{}, err
		}
		var res agent.ForgetResult
		err = c.do(ctx, "POST", "/v1/forget", req, &res)
		return res, err
	}
	lc, err := a.load(cmd)
	if err != nil {
		return agent.ForgetResult{}, err
	}
	cfg := lc.Config.UploaderConfig()
	if o.unsuppress {
		if cfg.Privacy.SuppressFile == "" {
			return agent.ForgetResult{}, uploader.ErrNoSuppressFile
		}
		if _, err := uploader.EditSuppressList(cfg.Privacy.SuppressFile, append(o.userIDs, o.anonymousIDs...), true); err != nil {
			return agent.ForgetResult{}, err
		}
		return agent.ForgetResult{Sources: []agent.ForgetSource{}, Unsuppressed: true, IDs: len(o.userIDs) + len(o.anonymousIDs)}, nil
	}
	d, err := openOffline(&lc.Config)
	if err != nil {
		return agent.ForgetResult{}, err
	}
	defer d.Close()
	log, _ := a.logger(&lc.Config)
	res, err := d.Forget(ctx, uploader.ForgetRequest{UserIDs: o.userIDs, AnonymousIDs: o.anonymousIDs, Suppress: o.suppress}, log)
	if err != nil {
		return agent.ForgetResult{}, err
	}
	return agent.NewForgetResult(res, req), nil
}

// printForget prints what a forget did: one row per source of events, then a summary.
func printForget(w io.Writer, res agent.ForgetResult) error {
	if res.Unsuppressed {
		_, err := fmt.Fprintf(w, "took %d id(s) off the suppress list: their events are accepted again\n", res.IDs)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tQUEUED\tDEAD\tDEAD BATCHES")
	for _, s := range res.Sources {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", s.Source, s.Queued, s.Dead, s.DeadBatches)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "removed %d event(s): %d queued, %d dead-lettered\n", res.Queued+res.Dead, res.Queued, res.Dead)
	if res.Suppressed {
		fmt.Fprintf(w, "suppressed %d id(s): their later events are dropped at intake\n", res.IDs)
	}
	return nil
}
