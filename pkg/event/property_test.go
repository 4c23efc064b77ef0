package event_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
	"pgregory.net/rapid"
)

// jsonValue draws a random JSON value, as compact bytes.
func jsonValue(t *rapid.T, label string, depth int) []byte {
	kind := rapid.IntRange(0, 5).Draw(t, label+"_kind")
	if depth > 2 {
		kind %= 4
	}
	var v any
	switch kind {
	case 0:
		v = rapid.String().Draw(t, label+"_s")
	case 1:
		v = rapid.Float64().Draw(t, label+"_f")
	case 2:
		v = rapid.Bool().Draw(t, label+"_b")
	case 3:
		v = nil
	case 4:
		n := rapid.IntRange(0, 3).Draw(t, label+"_n")
		arr := make([]json.RawMessage, n)
		for i := range arr {
			arr[i] = jsonValue(t, label+"_e", depth+1)
		}
		v = arr
	default:
		return jsonObject(t, label, depth+1, rapid.IntRange(0, 3).Draw(t, label+"_n"))
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonObject draws an object of n members with distinct keys drawn from a
// small alphabet (so that batch and event objects share keys).
func jsonObject(t *rapid.T, label string, depth, n int) []byte {
	keys := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "ip", "library", "page", "é"}), n, n, rapid.ID[string]).Draw(t, label+"_keys")
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(append(b, kb...), ':')
		b = append(b, jsonValue(t, label+"_v", depth)...)
	}
	return append(b, '}')
}

func TestParseBatch_PropertyKeepsFieldsAndMergesWithEventPrecedence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var batchCtx, batchInteg []byte
		if rapid.Bool().Draw(t, "has_batch_ctx") {
			batchCtx = jsonObject(t, "bctx", 1, rapid.IntRange(0, 4).Draw(t, "bctx_n"))
		}
		if rapid.Bool().Draw(t, "has_batch_integ") {
			batchInteg = jsonObject(t, "binteg", 1, rapid.IntRange(0, 4).Draw(t, "binteg_n"))
		}
		n := rapid.IntRange(1, 4).Draw(t, "events")
		raws := make([][]byte, n)
		for i := range raws {
			members := [][]byte{[]byte(`"type":"track"`), []byte(`"event":"e"`), []byte(`"userId":"u"`)}
			for j := range rapid.IntRange(0, 4).Draw(t, "unknown") {
				members = append(members, append([]byte(`"x`+string(rune('0'+j))+`":`), jsonValue(t, "x", 0)...))
			}
			if rapid.Bool().Draw(t, "has_ctx") {
				members = append(members, append([]byte(`"context":`), jsonObject(t, "ctx", 1, rapid.IntRange(0, 4).Draw(t, "ctx_n"))...))
			}
			if rapid.Bool().Draw(t, "has_integ") {
				members = append(members, append([]byte(`"integrations":`), jsonObject(t, "integ", 1, rapid.IntRange(0, 3).Draw(t, "integ_n"))...))
			}
			perm := rapid.Permutation(members).Draw(t, "order")
			raws[i] = append(append([]byte{'{'}, bytes.Join(perm, []byte{','})...), '}')
		}
		body := []byte(`{"batch":[` + string(bytes.Join(raws, []byte{','})) + `]`)
		if batchCtx != nil {
			body = append(append(body, `,"context":`...), batchCtx...)
		}
		if batchInteg != nil {
			body = append(append(body, `,"integrations":`...), batchInteg...)
		}
		body = append(body, '}')

		o := opts()
		o.Library = []byte(`{"name":"default"}`)
		evs, err := event.ParseBatch(body, o)
		if err != nil {
			t.Fatalf("ParseBatch(%s): %v", body, err)
		}
		for i, ev := range evs {
			var in, out map[string]json.RawMessage
			mustUnmarshal(t, raws[i], &in)
			mustUnmarshal(t, ev, &out)
			for k, v := range in {
				if k != "context" && k != "integrations" && !bytes.Equal(out[k], v) {
					t.Fatalf("event %d field %s: %s → %s", i, k, v, out[k])
				}
			}
			wantCtx := merged(t, batchCtx, in["context"])
			if _, ok := wantCtx["library"]; !ok {
				wantCtx["library"] = o.Library
			}
			checkObject(t, "context", wantCtx, out["context"])
			switch wantInteg := merged(t, batchInteg, in["integrations"]); {
			case in["integrations"] == nil && len(wantInteg) == 0:
				if _, ok := out["integrations"]; ok {
					t.Fatalf("integrations added with nothing to add: %s", ev)
				}
			default:
				checkObject(t, "integrations", wantInteg, out["integrations"])
			}
		}
	})
}

// merged is the batch object overlaid with the event's (event keys win).
func merged(t *rapid.T, batch, ev []byte) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if batch != nil {
		mustUnmarshal(t, batch, &m)
	}
	if ev != nil {
		var e map[string]json.RawMessage
		mustUnmarshal(t, ev, &e)
		for k, v := range e {
			m[k] = v
		}
	}
	return m
}

func checkObject(t *rapid.T, name string, want map[string]json.RawMessage, got []byte) {
	var g map[string]json.RawMessage
	mustUnmarshal(t, got, &g)
	if len(g) != len(want) {
		t.Fatalf("%s = %s, want keys of %v", name, got, want)
	}
	for k, v := range want {
		if !bytes.Equal(g[k], v) {
			t.Fatalf("%s.%s = %s, want %s (whole: %s)", name, k, g[k], v, got)
		}
	}
}

func mustUnmarshal(t *rapid.T, b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
}
