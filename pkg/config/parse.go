package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sizes accept plain bytes or a number with a unit. Decimal units are powers of 1000 and binary
// units powers of 1024, as IEC 80000-13 has it: 1KB = 1000 bytes, 1KiB = 1024 bytes, so the
// default limits.max_event_bytes, 32768 bytes, is written 32KiB. Units are case-insensitive.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseSize parses "512000", "32KiB", "1.5 GB" into bytes.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%q is not a size; write bytes (512000) or a number with a unit: KB, MB, GB (1000) or KiB, MiB, GiB (1024)", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	v := f * mult
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}

// formatSize prints bytes exactly, adding the binary unit when it divides evenly: "33554432 (32MiB)".
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		v    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d (%d%s)", n, n/u.v, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

// parseValue turns a raw value from any source (a YAML scalar, list or mapping, or the text of an
// environment variable or flag) into the Go value of the key's kind.
func parseValue(d *keyDef, raw any) (any, error) {
	switch d.kind {
	case kindString:
		s, err := scalarText(raw)
		if err != nil {
			return nil, err
		}
		if d.trim {
			s = strings.TrimSpace(s)
		}
		if len(d.enum) > 0 && !contains(d.enum, s) {
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(d.enum, ", "))
		}
		return s, nil
	case kindBool:
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		s, err := scalarText(raw)
		if err != nil {
			return nil, err
		}
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		return b, nil
	case kindInt:
		n, err := parseInt(raw)
		if err != nil {
			return nil, err
		}
		return n, checkMin(d, n, strconv.FormatInt(n, 10))
	case kindSize:
		n, err := parseInt(raw)
		if err != nil {
			s, serr := scalarText(raw)
			if serr != nil {
				return nil, serr
			}
			if n, err = parseSize(s); err != nil {
				return nil, err
			}
		}
		return n, checkMin(d, n, formatSize(n))
	case kindDuration:
		s, err := scalarText(raw)
		if err != nil {
			return nil, err
		}
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration; write a Go duration such as 500ms, 30s, 5m or 12h", s)
		}
		return dur, checkMin(d, int64(dur), dur.String())
	case kindList:
		return parseList(raw)
	case kindMap:
		return parseMap(raw)
	}
	return nil, fmt.Errorf("internal error: key %s has no parser", d.key)
}

func checkMin(d *keyDef, n int64, shown string) error {
	if n >= d.min {
		return nil
	}
	if d.min == 1 {
		return fmt.Errorf("%s must be greater than zero", shown)
	}
	return fmt.Errorf("%s must not be negative", shown)
}

// parseInt accepts YAML integers (and integral floats) or their text.
func parseInt(raw any) (int64, error) {
	switch v := raw.(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("%d is too large", v)
		}
		return int64(v), nil
	case float64:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("%v is not a whole number", v)
		}
		return int64(v), nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%v is not a whole number", raw)
}

// scalarText is the text of a YAML scalar; lists and mappings are refused.
func scalarText(raw any) (string, error) {
	switch v := raw.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any, map[string]any:
		return "", fmt.Errorf("expected a single value, got %T", raw)
	}
	return fmt.Sprint(raw), nil
}

// parseList accepts a YAML list, or text with comma-separated items (environment variables).
func parseList(raw any) ([]string, error) {
	out := []string{}
	switch v := raw.(type) {
	case nil:
		return out, nil
	case []any:
		for _, item := range v {
			s, err := scalarText(item)
			if err != nil {
				return nil, fmt.Errorf("list item: %w", err)
			}
			out = append(out, s)
		}
		return out, nil
	case []string:
		return append(out, v...), nil
	case string:
		if strings.TrimSpace(v) == "[]" {
			return out, nil
		}
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a list, got %v", raw)
}

// parseMap accepts a YAML mapping, or "Name=Value,Name2=Value2" text (environment variables).
func parseMap(raw any) (map[string]string, error) {
	out := map[string]string{}
	switch v := raw.(type) {
	case nil:
		return out, nil
	case map[string]any:
		for k, item := range v {
			s, err := scalarText(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = s
		}
		return out, nil
	case string:
		if t := strings.TrimSpace(v); t == "" || t == "{}" {
			return out, nil
		}
		for _, pair := range strings.Split(v, ",") {
			name, value, ok := strings.Cut(pair, "=")
			if name = strings.TrimSpace(name); !ok || name == "" {
				return nil, fmt.Errorf("%q is not Name=Value (separate pairs with commas)", pair)
			}
			out[name] = strings.TrimSpace(value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a mapping of header names to values, got %v", raw)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
