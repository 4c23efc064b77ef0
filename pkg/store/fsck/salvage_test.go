package fsck

import (
	"bytes"
	"strings"
	"testing"
)

func TestSortKV_DropsStaleCopiesKeepsRecordsWhoseDamagedKeyCollides(t *testing.T) {
	k := func(b byte) []byte { return append(bytes.Repeat([]byte{1}, 19), b) }
	rec := func(key []byte, v string) kv { return kv{k: key, v: []byte(v)} }
	keep := func(r kv) kv { return r }
	got := sortKV([]kv{rec(k(3), "c"), rec(k(1), "a"), rec(k(2), "b"), rec(k(1), "a"), rec(k(2), "x")}, keep)
	var vals []string
	for i, r := range got {
		vals = append(vals, string(r.v))
		if i > 0 && bytes.Compare(got[i-1].k, r.k) >= 0 {
			t.Fatalf("keys not strictly increasing at %d", i)
		}
	}
	if strings.Join(vals, "") != "abcx" {
		t.Fatalf("sortKV kept %q, want a, b, c in order and the colliding x after them", vals)
	}
}
