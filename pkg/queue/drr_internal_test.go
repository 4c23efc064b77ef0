package queue

import (
	"slices"
	"testing"
)

func TestDRR_TakesTurnsWeightedByBytes(t *testing.T) {
	type lease struct {
		active []string
		bytes  int64 // what the lease of the source picked takes
		want   string
	}
	tests := []struct {
		name    string
		quantum int64
		leases  []lease
	}{
		{name: "no source with work picks none", quantum: 100, leases: []lease{
			{active: nil, want: ""},
		}},
		{name: "one source keeps every turn", quantum: 100, leases: []lease{
			{[]string{"a"}, 100, "a"}, {[]string{"a"}, 100, "a"}, {[]string{"a"}, 100, "a"},
		}},
		{name: "full batches alternate between two sources", quantum: 100, leases: []lease{
			{[]string{"a", "b"}, 100, "a"}, {[]string{"a", "b"}, 100, "b"},
			{[]string{"a", "b"}, 100, "a"}, {[]string{"a", "b"}, 100, "b"},
		}},
		{name: "a source keeps its turn while its credit lasts", quantum: 100, leases: []lease{
			{[]string{"a", "b"}, 40, "a"}, {[]string{"a", "b"}, 40, "a"}, {[]string{"a", "b"}, 40, "a"},
			{[]string{"a", "b"}, 100, "b"}, {[]string{"a", "b"}, 100, "a"},
		}},
		{name: "a lease over the credit is made up in later turns", quantum: 100, leases: []lease{
			{[]string{"a", "b"}, 250, "a"}, {[]string{"a", "b"}, 100, "b"},
			{[]string{"a", "b"}, 100, "b"}, // a's credit is -150+100 = -50: no turn
			{[]string{"a", "b"}, 100, "a"}, // -50+100 = 50 > 0
		}},
		{name: "a source without work is skipped and loses its credit", quantum: 100, leases: []lease{
			{[]string{"a", "b"}, 10, "a"}, {[]string{"b"}, 100, "b"},
			{[]string{"a", "b"}, 100, "a"}, // a credited afresh: 0+100
			{[]string{"a", "b"}, 100, "b"},
		}},
		{name: "a source first seen joins the ring at its end", quantum: 100, leases: []lease{
			{[]string{"a"}, 100, "a"}, {[]string{"a", "c"}, 100, "c"}, {[]string{"a", "c"}, 100, "a"},
		}},
		{name: "the order sources are given in does not matter", quantum: 100, leases: []lease{
			{[]string{"b", "a"}, 100, "b"}, {[]string{"a", "b"}, 100, "a"}, {[]string{"a", "b"}, 100, "b"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDRR(tt.quantum)
			var got []string
			var want []string
			for _, l := range tt.leases {
				src := d.next(l.active)
				got, want = append(got, src), append(want, l.want)
				if src != "" {
					d.charge(src, l.bytes)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("turns %q, want %q", got, want)
			}
		})
	}
}
