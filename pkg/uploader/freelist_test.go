package uploader

import "testing"

func TestFreeList_KeepsAtMostMaxValues(t *testing.T) {
	f := freeList[int]{max: 2}
	if _, ok := f.get(); ok {
		t.Fatal("an empty list gave a value")
	}
	f.put(1)
	f.put(2)
	f.put(3) // over max: dropped
	got := map[int]bool{}
	for {
		v, ok := f.get()
		if !ok {
			break
		}
		got[v] = true
	}
	if len(got) != 2 || !got[1] || !got[2] {
		t.Errorf("got back %v, want the first two values put", got)
	}
}
