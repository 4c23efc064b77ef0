package freelist

import "testing"

func TestList_KeepsAtMostMaxValues(t *testing.T) {
	f := New[int](2)
	if _, ok := f.Get(); ok {
		t.Fatal("an empty list gave a value")
	}
	f.Put(1)
	f.Put(2)
	f.Put(3) // over max: dropped
	got := map[int]bool{}
	for {
		v, ok := f.Get()
		if !ok {
			break
		}
		got[v] = true
	}
	if len(got) != 2 || !got[1] || !got[2] {
		t.Errorf("got back %v, want the first two values put", got)
	}
}
