package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// batchPath is appended to apiHost to form the upload endpoint, as Segment's SDKs do.
const batchPath = "/v1/batch"

// input is the --input document, validated: every field is in range and the events are JSON
// objects (their content is checked by the uploader when they are enqueued).
type input struct {
	WriteKey  string
	Endpoint  string // apiHost + "/v1/batch"; the uploader's default when apiHost is absent
	Sequences []sequence
	Config    runConfig
}

// sequence is one {delayMs, events} step: sleep Delay, then enqueue Events in order.
type sequence struct {
	Delay  time.Duration
	Events []json.RawMessage
}

// runConfig holds the optional SDK settings; a nil field means "the uploader's default".
type runConfig struct {
	FlushAt       *int           // batch.max_events
	FlushInterval *time.Duration // batch.interval
	MaxRetries    *int           // retry.max_retries
	Timeout       *time.Duration // upload.timeout
}

// rawInput is the wire shape of --input. Pointers tell absent from zero; unknown fields (for
// example cdnHost, which other SDKs' CLIs take) are ignored.
type rawInput struct {
	WriteKey  *string        `json:"writeKey"`
	APIHost   *string        `json:"apiHost"`
	Sequences *[]rawSequence `json:"sequences"`
	Config    *rawConfig     `json:"config"`
}

type rawSequence struct {
	DelayMs *float64          `json:"delayMs"`
	Events  []json.RawMessage `json:"events"`
}

type rawConfig struct {
	FlushAt       *float64 `json:"flushAt"`
	FlushInterval *float64 `json:"flushInterval"` // milliseconds
	MaxRetries    *float64 `json:"maxRetries"`
	Timeout       *float64 `json:"timeout"` // seconds
}

// parseInput decodes and validates the --input JSON. Its error names the offending field
// ("config.flushAt: must be a whole number") and wraps errBadInput.
func parseInput(doc string) (*input, error) {
	var raw rawInput
	dec := json.NewDecoder(strings.NewReader(doc))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %s", errBadInput, describeJSONError(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: input: unexpected data after the JSON object", errBadInput)
	}
	in := &input{}
	var errs []string
	bad := func(field, why string) { errs = append(errs, field+": "+why) }

	switch {
	case raw.WriteKey == nil:
		bad("writeKey", "required")
	case *raw.WriteKey == "":
		bad("writeKey", "must not be empty")
	default:
		in.WriteKey = *raw.WriteKey
	}
	in.Endpoint = uploader.DefaultEndpoint
	if raw.APIHost != nil {
		ep, err := endpointFor(*raw.APIHost)
		if err != nil {
			bad("apiHost", err.Error())
		}
		in.Endpoint = ep
	}
	if raw.Sequences == nil {
		bad("sequences", "required (a list of {delayMs, events})")
	} else {
		in.Sequences = parseSequences(*raw.Sequences, bad)
	}
	if raw.Config != nil {
		in.Config = parseConfig(*raw.Config, bad)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", errBadInput, strings.Join(errs, "; "))
	}
	return in, nil
}

// endpointFor turns apiHost (a base URL such as http://127.0.0.1:8080) into the batch endpoint.
func endpointFor(apiHost string) (string, error) {
	u, err := url.Parse(apiHost)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q: must be an http or https base URL such as http://127.0.0.1:8080", apiHost)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: must be a base URL without query or fragment", apiHost)
	}
	return strings.TrimRight(apiHost, "/") + batchPath, nil
}

func parseSequences(raw []rawSequence, bad func(field, why string)) []sequence {
	seqs := make([]sequence, 0, len(raw))
	for i, rs := range raw {
		s := sequence{Events: rs.Events}
		if rs.DelayMs != nil {
			d, err := duration(*rs.DelayMs, time.Millisecond, true)
			if err != nil {
				bad(fmt.Sprintf("sequences[%d].delayMs", i), err.Error())
			}
			s.Delay = d
		}
		for j, ev := range rs.Events {
			if t := bytes.TrimLeft(ev, " \t\r\n"); len(t) == 0 || t[0] != '{' {
				bad(fmt.Sprintf("sequences[%d].events[%d]", i, j), "must be a JSON object")
			}
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// parseConfig maps the SDK settings. flushAt, flushInterval and timeout of 0 mean "default",
// as in Segment's SDKs whose zero value is "unset"; maxRetries 0 means "no retries".
func parseConfig(rc rawConfig, bad func(field, why string)) runConfig {
	var c runConfig
	if v := rc.FlushAt; v != nil && *v != 0 {
		n, err := count(*v, 1)
		if err != nil {
			bad("config.flushAt", err.Error())
		}
		c.FlushAt = &n
	}
	if v := rc.FlushInterval; v != nil && *v != 0 {
		d, err := duration(*v, time.Millisecond, false)
		if err != nil {
			bad("config.flushInterval", err.Error())
		}
		c.FlushInterval = &d
	}
	if v := rc.MaxRetries; v != nil {
		n, err := count(*v, 0)
		if err != nil {
			bad("config.maxRetries", err.Error())
		}
		c.MaxRetries = &n
	}
	if v := rc.Timeout; v != nil && *v != 0 {
		d, err := duration(*v, time.Second, false)
		if err != nil {
			bad("config.timeout", err.Error())
		}
		c.Timeout = &d
	}
	return c
}

// count checks that v is a whole number of at least lo.
func count(v float64, lo int) (int, error) {
	switch {
	case v != math.Trunc(v):
		return 0, fmt.Errorf("%v: must be a whole number", v)
	case v < float64(lo):
		return 0, fmt.Errorf("%v: must be at least %d", v, lo)
	case v > math.MaxInt32:
		return 0, fmt.Errorf("%v: too large", v)
	}
	return int(v), nil
}

// duration converts v units to a duration; zero is allowed only when zeroOK.
func duration(v float64, unit time.Duration, zeroOK bool) (time.Duration, error) {
	switch {
	case v < 0 && zeroOK:
		return 0, fmt.Errorf("%v: must not be negative", v)
	case v <= 0 && !zeroOK:
		return 0, fmt.Errorf("%v: must be greater than zero", v)
	case v > float64(math.MaxInt64/int64(unit)):
		return 0, fmt.Errorf("%v: too large", v)
	}
	return time.Duration(v * float64(unit)), nil
}

// describeJSONError phrases a decoding error in terms of the input's fields.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "input"
		}
		return fmt.Sprintf("%s: must be %s, not %s", field, kindOf(te.Type.Kind().String()), te.Value)
	}
	return "input: invalid JSON: " + err.Error()
}

// kindOf names a Go kind the way the input's JSON would.
func kindOf(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "float64", "int":
		return "a number"
	case "slice":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	default:
		return kind
	}
}
