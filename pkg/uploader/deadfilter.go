package uploader

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A DeadFilter as text: what `outbox dead --source ... --since ...` and the admin API's query
// parameters (and replay and purge bodies) take. One parser serves both, so a value means the
// same everywhere and a bad one gets the same answer.

// DeadFilterFields returns the names of a DeadFilter's fields as text, in the order they are
// documented: the command line's flags (--source) and the admin API's parameters.
func DeadFilterFields() []string { return []string{"source", "since", "until", "status", "reason"} }

// DeadFilterError is a filter value ParseDeadFilter refused: the field, the value as given, and
// what is wrong with it and what to give instead. The caller says where the value came from
// (a flag, a query parameter).
type DeadFilterError struct {
	Field, Value, Reason string
}

func (e *DeadFilterError) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason) }

// deadStatusRE is the form of a result code that is not an HTTP status: a Kafka error name
// (NOT_ENOUGH_REPLICAS) or a network error class (maybe_sent).
var deadStatusRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// ParseDeadFilter reads a DeadFilter from text by field name (DeadFilterFields); a field absent
// from text matches every batch. since and until take an RFC 3339 time or a duration ago
// ("90m", "2h", "7d": Go's units and d for days) from now; status the last answer's code (an
// HTTP status, a Kafka error name or a network error class); reason one of DeadReasons; source
// a source's name. Any other field, an empty value, a value of the wrong form or since after
// until is a *DeadFilterError (the first found, fields in their documented order).
func ParseDeadFilter(text map[string]string, now time.Time) (DeadFilter, error) {
	fields := DeadFilterFields()
	var unknown []string
	for k := range text {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return DeadFilter{}, &DeadFilterError{Field: unknown[0], Value: text[unknown[0]],
			Reason: "not a dead-letter filter; the filters are " + strings.Join(fields, ", ")}
	}
	var f DeadFilter
	for _, field := range fields {
		v, ok := text[field]
		if !ok {
			continue
		}
		bad := func(why string) error { return &DeadFilterError{Field: field, Value: v, Reason: why} }
		if v == "" {
			return DeadFilter{}, bad("empty; leave the filter out to match every dead batch")
		}
		switch field {
		case "source":
			if !sourceNameRE.MatchString(v) {
				return DeadFilter{}, bad("not a source name: 1 to 63 lower-case letters, digits, - and _ ('outbox status' lists the sources)")
			}
			f.Source = v
		case "since", "until":
			t, err := parseDeadTime(v, now)
			if err != nil {
				return DeadFilter{}, bad(err.Error())
			}
			if field == "since" {
				f.Since = t
			} else {
				f.Until = t
			}
		case "status":
			if err := checkDeadStatus(v); err != nil {
				return DeadFilter{}, bad(err.Error())
			}
			f.Status = v
		case "reason":
			if !slices.Contains(DeadReasons(), v) {
				return DeadFilter{}, bad("not a dead-letter reason; use one of " + strings.Join(DeadReasons(), ", "))
			}
			f.Reason = v
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return DeadFilter{}, &DeadFilterError{Field: "since", Value: text["since"],
			Reason: fmt.Sprintf("is not before until %q, so no batch could match; give since the earlier time", text["until"])}
	}
	return f, nil
}

// DeadFilterText is f as text, the form ParseDeadFilter reads back: only the fields f sets,
// times in RFC 3339 (UTC, with their fraction).
func DeadFilterText(f DeadFilter) map[string]string {
	out := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	set("source", f.Source)
	if !f.Since.IsZero() {
		set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	set("status", f.Status)
	set("reason", f.Reason)
	return out
}

// parseDeadTime reads an RFC 3339 time, or a duration ago from now, in UTC.
func parseDeadTime(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, nerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, nerr
		if nerr == nil && n > 1<<16 {
			err = fmt.Errorf("too many days")
		}
	}
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("not a time: give an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (90m, 2h, 7d)")
	case d < 0:
		return time.Time{}, fmt.Errorf("a duration ago cannot be negative: give 2h for two hours ago")
	}
	return now.Add(-d).UTC(), nil
}

// checkDeadStatus reports whether v can be the last answer's code of a dead batch.
func checkDeadStatus(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 100 || n > 599 {
			return fmt.Errorf("not an HTTP status: give one from 100 to 599, e.g. 429 or 500")
		}
		return nil
	}
	if !deadStatusRE.MatchString(v) {
		return fmt.Errorf("not a result code: give an HTTP status (429, 500), a Kafka error name (NOT_ENOUGH_REPLICAS) or a network error class (never_sent, maybe_sent)")
	}
	return nil
}
