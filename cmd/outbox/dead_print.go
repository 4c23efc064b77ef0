package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
)

// printDeadList prints one line per dead batch; filtered says the list was filtered, for the
// line printed when it is empty.
func printDeadList(w io.Writer, list []agent.DeadBatch, filtered bool) error {
	if len(list) == 0 {
		if filtered {
			fmt.Fprintln(w, "no dead letters match the filters")
		} else {
			fmt.Fprintln(w, "no dead letters")
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEAD SINCE\tSOURCE\tEVENTS\tBYTES\tREASON\tSTATUS\tATTEMPTS\tREPLAYS")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", d.ID, d.At.Local().Format(time.DateTime), orDash(d.Source),
			d.Events, humanBytes(d.Bytes), orDash(d.Reason), deadStatus(d), d.Attempts, d.Replays)
	}
	return tw.Flush()
}

// deadStatus is the last answer of d as the STATUS column shows it: its code, else its HTTP
// status or network error class (a batch dead-lettered by an older agent), else "-".
func deadStatus(d agent.DeadBatch) string {
	switch {
	case d.Code != "":
		return d.Code
	case d.Status != 0:
		return fmt.Sprint(d.Status)
	}
	return orDash(d.ErrorClass)
}

func printDead(w io.Writer, d agent.DeadBatch) {
	fmt.Fprintf(w, "id:        %s\ndead since: %s\nsource:    %s\nreason:    %s\n", d.ID, d.At.Local().Format(time.DateTime), orDash(d.Source), orDash(d.Reason))
	if d.Detail != "" {
		fmt.Fprintf(w, "why:       %s\n", strings.TrimSpace(d.Detail))
	}
	if d.Status != 0 {
		fmt.Fprintf(w, "status:    %d\n", d.Status)
	} else if d.Code != "" {
		fmt.Fprintf(w, "code:      %s\n", d.Code)
	}
	if d.ErrorClass != "" {
		fmt.Fprintf(w, "error:     %s\n", d.ErrorClass)
	}
	fmt.Fprintf(w, "attempts:  %d\nreplays:   %d\nevents:    %d (%s)\n", d.Attempts, d.Replays, d.Events, humanBytes(d.Bytes))
	if d.Response != "" {
		fmt.Fprintf(w, "response:  %s\n", strings.TrimSpace(d.Response))
	}
	for _, e := range d.Batch {
		fmt.Fprintln(w, strings.TrimSpace(string(e)))
	}
}
