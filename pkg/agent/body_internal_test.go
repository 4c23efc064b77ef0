package agent

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadAll_ReadsEveryByteWhateverTheBufferItStartsWith(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	for _, tc := range []struct {
		name  string
		size  int
		start int // capacity of the buffer handed in
		small bool
	}{
		{"empty body", 0, 0, false},
		{"body that fits with room to spare", 1000, 1 << 12, false},
		{"body exactly as large as the buffer", 4096, 4096, false},
		{"body larger than the buffer", len(src), 100, false},
		{"body arriving a byte at a time", 3000, 16, true},
		{"no buffer at all", 5000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := make([]byte, 0, tc.start)
			var r io.Reader = bytes.NewReader(src[:tc.size])
			if tc.small {
				r = iotest.OneByteReader(r)
			}
			n, err := readAll(&b, r)
			if err != nil || n != int64(tc.size) || !bytes.Equal(b, src[:tc.size]) {
				t.Fatalf("readAll = %d, %v; got %d bytes, want the %d sent", n, err, len(b), tc.size)
			}
		})
	}
}

func TestReadAll_ReturnsTheReadError(t *testing.T) {
	var b []byte
	boom := errors.New("boom")
	_, err := readAll(&b, io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestBodyReader_ReusesBuffersOnlyOfASaneSize(t *testing.T) {
	br := newBodyReader(8 << 20)
	small := requestBody{br: br, buf: br.getBuf(1000)}
	if cap(*small.buf) < 1000 {
		t.Fatalf("getBuf(1000) has capacity %d", cap(*small.buf))
	}
	*small.buf = append(*small.buf, "left over"...)
	small.release()
	again := br.getBuf(10)
	if len(*again) != 0 {
		t.Errorf("a reused buffer holds %q, want it empty", *again)
	}
	if got := br.getBuf(1 << 20); cap(*got) < 1<<20 {
		t.Errorf("getBuf(1 MiB) has capacity %d, too small", cap(*got))
	}
	huge := requestBody{br: br, buf: br.getBuf(maxPooledBody + 1)}
	huge.release()
	for bp, ok := br.bufs.Get(); ok; bp, ok = br.bufs.Get() {
		if cap(*bp) > maxPooledBody {
			t.Fatalf("a %d-byte buffer was kept, over maxPooledBody", cap(*bp))
		}
	}
}
