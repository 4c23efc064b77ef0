package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// sendChunkBytes and sendChunkEvents bound one POST /v1/batch of `outbox send`, well under the
// agent's default limits.max_request_bytes (512000).
const (
	sendChunkBytes  = 400_000
	sendChunkEvents = 500
)

type sendOptions struct{ agent string }

func newSendCommand(a *app) *cobra.Command {
	o := &sendOptions{}
	cmd := &cobra.Command{
		Use:   "send [JSON ...]",
		Short: "Send events to a running agent",
		Long: `Send events to a running agent (POST /v1/batch). Each argument is one event as a JSON
object (or a JSON array of events); "-" (or no arguments at all) reads events from standard
input, one JSON object (or array) per line. The agent answers only after the events are on disk.

An event without "type" gets one from its fields: "event" → track, "groupId" → group,
"previousId" → alias, "traits" → identify; page and screen events must say their type. Every
event needs "userId" or "anonymousId". messageId and timestamp are added when missing.

Credentials: when the agent requires one, the configured ingest.token (Bearer) or first
ingest.write_keys entry is sent; set them with OUTBOX_INGEST_TOKEN / OUTBOX_INGEST_WRITE_KEYS
or the config file, never on the command line.`,
		Example: `  outbox send '{"type":"track","event":"Signed Up","userId":"u1","properties":{"plan":"pro"}}'
  outbox send '{"event":"Clicked","anonymousId":"a1"}' '{"traits":{"name":"Ada"},"userId":"u1"}'
  cat events.jsonl | outbox send -
  echo '{"event":"Clicked","userId":"u1"}' | outbox send - '{"event":"Seen","userId":"u2"}'
  outbox send --agent http://10.0.0.5:8089 < events.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(a, cmd, args) },
	}
	addAgentFlag(cmd, &o.agent)
	return cmd
}

func (o *sendOptions) run(a *app, cmd *cobra.Command, args []string) error {
	events, err := readEvents(args, cmd.InOrStdin())
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return usageErrorf("no events to send: pass JSON objects as arguments, or - and JSON lines on standard input")
	}
	c, _, err := a.newAgentClient(cmd, o.agent)
	if err != nil {
		return err
	}
	sent, requests := 0, 0
	for start := 0; start < len(events); {
		end, size := start, 0
		for end < len(events) && end-start < sendChunkEvents && (end == start || size+len(events[end]) < sendChunkBytes) {
			size += len(events[end]) + 1
			end++
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), requestTimeout)
		err := c.ingest(ctx, "POST", "/v1/batch", map[string]any{"batch": events[start:end]}, nil)
		cancel()
		if err != nil {
			var ae *agentError
			if errors.As(err, &ae) && ae.Index != nil {
				i := start + *ae.Index
				ae.Index = &i
			}
			if sent > 0 {
				return fmt.Errorf("%w (the %d events before this request were accepted)", err, sent)
			}
			return err
		}
		sent += end - start
		requests++
		start = end
	}
	fmt.Fprintf(cmd.OutOrStdout(), "sent %d event(s) in %d request(s) to %s; they are on the agent's disk\n", sent, requests, c.base)
	return nil
}

// readEvents collects events from args, in order, where an argument "-" stands for the JSON lines
// of r (as do no arguments at all), filling in "type" where it can be inferred.
func readEvents(args []string, r io.Reader) ([]json.RawMessage, error) {
	var out []json.RawMessage
	add := func(where string, raw []byte) error {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return nil
		}
		var list []json.RawMessage
		if raw[0] == '[' {
			if err := json.Unmarshal(raw, &list); err != nil {
				return usageErrorf("%s is not a JSON array of events: %w", where, err)
			}
		} else {
			list = []json.RawMessage{raw}
		}
		for _, ev := range list {
			typed, err := withType(ev)
			if err != nil {
				return usageErrorf("%s: %w", where, err)
			}
			out = append(out, typed)
		}
		return nil
	}
	readStdin := func() error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for line := 1; sc.Scan(); line++ {
			if err := add(fmt.Sprintf("stdin line %d", line), sc.Bytes()); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading events from stdin: %w", err)
		}
		return nil
	}
	if len(args) == 0 {
		return out, readStdin()
	}
	stdinRead := false
	for i, arg := range args {
		if arg != "-" {
			if err := add(fmt.Sprintf("argument %d", i+1), []byte(arg)); err != nil {
				return nil, err
			}
			continue
		}
		if stdinRead {
			return nil, usageErrorf(`argument %d: "-" (standard input) is given twice; pass it once`, i+1)
		}
		stdinRead = true
		if err := readStdin(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withType returns ev with a "type" field, inferred from its other fields when absent.
func withType(ev json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(ev, &fields); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := fields["type"]; ok {
		return ev, nil
	}
	var typ string
	switch {
	case fields["event"] != nil:
		typ = "track"
	case fields["groupId"] != nil:
		typ = "group"
	case fields["previousId"] != nil:
		typ = "alias"
	case fields["traits"] != nil:
		typ = "identify"
	default:
		return nil, errors.New(`event has no "type" and none can be inferred; add "type":"track" (or identify, page, screen, group, alias)`)
	}
	fields["type"], _ = json.Marshal(typ)
	return json.Marshal(fields)
}
