package sink

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFaults parses a fault spec (the syntax of `outbox sink --fail`, documented in doc.go)
// into a Script. An empty spec is the zero Script, which accepts everything.
//
//	ParseFaults("503x5,429:ra=1,reset-after-body,200")   // a sequence, then 200s
//	ParseFaults("503:20%,429:5%:ra=1,seed=7")            // chances with a fixed seed
func ParseFaults(spec string) (Script, error) {
	var s Script
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return s, nil
	}
	hasDefault := false
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Script{}, fmt.Errorf("%w: empty item in %q", ErrBadFaultSpec, spec)
		}
		if v, ok := strings.CutPrefix(item, "seed="); ok {
			seed, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return Script{}, fmt.Errorf("%w: seed %q is not an unsigned integer", ErrBadFaultSpec, v)
			}
			s.Seed = seed
			continue
		}
		it, err := parseItem(item)
		if err != nil {
			return Script{}, fmt.Errorf("%w: item %q: %w", ErrBadFaultSpec, item, err)
		}
		switch {
		case it.isDefault:
			if hasDefault {
				return Script{}, fmt.Errorf("%w: more than one default item", ErrBadFaultSpec)
			}
			hasDefault = true
			s.Default = it.resp
		case it.chance >= 0:
			s.Chances = append(s.Chances, Chance{P: it.chance, Response: it.resp})
		default:
			for range it.count {
				s.Steps = append(s.Steps, it.resp)
			}
		}
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// item is one parsed comma-separated element of a fault spec.
type item struct {
	resp      Response
	count     int     // repetitions as a step
	chance    float64 // probability, -1 when not a chance
	isDefault bool
}

func parseItem(s string) (item, error) {
	it := item{count: 1, chance: -1}
	head, rest, _ := strings.Cut(s, ":")
	if err := parseHead(head, &it); err != nil {
		return it, err
	}
	for rest != "" {
		// loc= and body= take the rest of the item: URLs and bodies contain ':'.
		if v, ok := strings.CutPrefix(rest, "loc="); ok {
			it.resp.Location = v
			break
		}
		if v, ok := strings.CutPrefix(rest, "body="); ok {
			it.resp.Body = v
			break
		}
		var mod string
		mod, rest, _ = strings.Cut(rest, ":")
		if err := parseModifier(mod, &it); err != nil {
			return it, err
		}
	}
	if it.count != 1 && (it.chance >= 0 || it.isDefault) {
		return it, fmt.Errorf("a repeat count cannot go with a probability or default")
	}
	if it.chance >= 0 && it.isDefault {
		return it, fmt.Errorf("an item cannot be both a probability and the default")
	}
	return it, nil
}

// parseHead parses the response kind and its optional xN repeat count.
func parseHead(head string, it *item) error {
	kind := head
	if i := strings.LastIndexByte(head, 'x'); i > 0 {
		if n, err := strconv.Atoi(head[i+1:]); err == nil {
			if n < 1 {
				return fmt.Errorf("repeat count %d must be at least 1", n)
			}
			kind, it.count = head[:i], n
		}
	}
	switch kind {
	case "ok":
		it.resp.Status = 200
	case "reset", "reset-before-body":
		it.resp.Reset = ResetBeforeBody
	case "reset-after-body":
		it.resp.Reset = ResetAfterBody
	case "hang":
		it.resp.Hang = true
	default:
		code, err := strconv.Atoi(kind)
		if err != nil || code < 100 || code > 599 {
			return fmt.Errorf("%q is not a status code (100-599), ok, reset (or reset-before-body), reset-after-body or hang", kind)
		}
		it.resp.Status = code
	}
	return nil
}

func parseModifier(mod string, it *item) error {
	switch {
	case mod == "default":
		it.isDefault = true
	case strings.HasSuffix(mod, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(mod, "%"), 64)
		if err != nil || p < 0 || p > 100 {
			return fmt.Errorf("probability %q is not a percentage in [0,100]", mod)
		}
		it.chance = p / 100
	case len(mod) > 1 && mod[0] == 'x' && isDigits(mod[1:]):
		n, err := strconv.Atoi(mod[1:])
		if err != nil || n < 1 {
			return fmt.Errorf("repeat count %q must be at least 1", mod)
		}
		it.count = n
	case strings.HasPrefix(mod, "ra="):
		v := strings.TrimPrefix(mod, "ra=")
		if d, ok := strings.CutPrefix(v, "date"); ok {
			off, err := time.ParseDuration(d)
			if err != nil || off == 0 {
				return fmt.Errorf("ra=%s: want date+DURATION or date-DURATION", v)
			}
			it.resp.RetryAfterIn = off
			return nil
		}
		if v == "" {
			return fmt.Errorf("ra= needs a value")
		}
		it.resp.RetryAfter = v
	case strings.HasPrefix(mod, "delay="):
		d, err := time.ParseDuration(strings.TrimPrefix(mod, "delay="))
		if err != nil || d < 0 {
			return fmt.Errorf("%s: want a non-negative Go duration", mod)
		}
		it.resp.Delay = d
	default:
		return fmt.Errorf("unknown modifier %q (want xN, N%%, default, ra=, delay=, loc= or body=)", mod)
	}
	return nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
