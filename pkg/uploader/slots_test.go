package uploader

import "testing"

func TestSlots_RankCountsTheBatchesBeforeThatAreNotWaiting(t *testing.T) {
	var s slots
	a, b, c, d := s.add(), s.add(), s.add(), s.add()
	s.setWaiting(b, true)
	tests := []struct {
		name string
		id   uint64
		rank int
	}{
		{"the oldest has rank 0", a, 0},
		{"a waiting batch is not counted before others", c, 1},
		{"the newest counts every batch before it not waiting", d, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.rank(tt.id); got != tt.rank {
				t.Fatalf("rank = %d, want %d", got, tt.rank)
			}
		})
	}
	if s.inFlight() != 3 || !s.head(a) || s.head(c) {
		t.Fatalf("inFlight %d, head(a) %v, head(c) %v; want 3, true, false", s.inFlight(), s.head(a), s.head(c))
	}
	s.remove(a)
	if !s.head(b) || s.rank(d) != 1 {
		t.Fatalf("after the oldest left: head(b) %v, rank(d) %d; want true, 1", s.head(b), s.rank(d))
	}
}

func TestSlots_AttemptsAreNumberedInTheOrderTheyBegin(t *testing.T) {
	var s slots
	a, b := s.add(), s.add()
	s.begin(a)
	s.begin(b)
	if s.sending != 2 {
		t.Fatalf("sending %d, want 2", s.sending)
	}
	if nb, na := s.end(b), s.end(a); na >= nb || s.sending != 0 {
		t.Fatalf("attempt numbers a %d, b %d, sending %d; want a before b, none sending", na, nb, s.sending)
	}
}
