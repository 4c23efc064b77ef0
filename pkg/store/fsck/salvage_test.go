package fsck

import (
	"bytes"
	"strings"
	"testing"
)

func TestSortKV_DropsStaleCopiesKeepsRecordsWhoseDamagedKeyCollides(t *testing.T) {
	k := func(b byte) []byte { return append(bytes.Repeat([]byte{1}, 19), b) }
	got := sortKV([]kv{{k: k(3), v: []byte("c")}, {k: k(1), v: []byte("a")}, {k: k(2), v: []byte("b")}, {k: k(1), v: []byte("a")}, {k: k(2), v: []byte("x")}})
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
