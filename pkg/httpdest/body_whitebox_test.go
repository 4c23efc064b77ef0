package httpdest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

func TestEncode_GzipBodyIsAppendBodyWhateverTheEventSizes(t *testing.T) {
	sentAt := time.Date(2025, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	ev := func(n int) []byte { return []byte(`{"p":"` + strings.Repeat("x", n) + `"}`) }
	many := func(n, size int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = ev(size + i%7)
		}
		return out
	}
	tests := []struct {
		name   string
		events [][]byte
	}{
		{"one small event", [][]byte{ev(1)}},
		{"a batch filling the stage many times", many(500, 530)},
		{"events that end exactly at the stage's end", many(64, stageBytes/64-3)},
		{"an event larger than the stage between small ones", [][]byte{ev(3), ev(3 * stageBytes), ev(5)}},
		{"a first event larger than the stage", [][]byte{ev(stageBytes + 1), ev(2)}},
	}
	enc := newEncoder(true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second time with the kept writer and buffers
				b, err := enc.encode(tt.events, sentAt)
				if err != nil {
					t.Fatal(err)
				}
				zr, err := gzip.NewReader(bytes.NewReader(b.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
				want := AppendBody(nil, tt.events, sentAt)
				if !bytes.Equal(got, want) {
					t.Fatalf("gunzipped body (%d bytes) differs from AppendBody (%d bytes)", len(got), len(want))
				}
				if b.Plain != len(want) {
					t.Errorf("Plain = %d, body is %d bytes", b.Plain, len(want))
				}
				b.Release()
			}
		})
	}
}

func TestEncode_PlainBodyIsAppendBody(t *testing.T) {
	sentAt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	events := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}
	b, err := newEncoder(false).encode(events, sentAt)
	if err != nil {
		t.Fatal(err)
	}
	if want := AppendBody(nil, events, sentAt); !bytes.Equal(b.Bytes(), want) || b.Plain != len(want) {
		t.Errorf("body = %s (Plain %d), want %s", b.Bytes(), b.Plain, want)
	}
}
