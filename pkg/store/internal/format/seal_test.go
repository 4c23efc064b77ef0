package format

import (
	"bytes"
	"errors"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

func testCodec(t testing.TB, seeds ...byte) Codec {
	t.Helper()
	var keys [][]byte
	for _, s := range seeds {
		keys = append(keys, bytes.Repeat([]byte{s}, keyring.KeySize))
	}
	kr, err := keyring.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return NewCodec(kr)
}

var (
	key1 = bytes.Repeat([]byte{0xa1}, 20)
	key2 = bytes.Repeat([]byte{0xa2}, 20)
)

func TestCodec_OpenRefusesWhatWasNotSealedThere(t *testing.T) {
	c := testCodec(t, 1)
	payload := []byte(`{"traits":{"email":"jane@example.com"}}`)
	rec := c.Encode(BucketEvents, key1, payload)
	flipped := append([]byte(nil), rec...)
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name        string
		codec       Codec
		bucket, key []byte
		rec         []byte
		ok          bool
	}{
		{"where it was sealed it opens", c, BucketEvents, key1, rec, true},
		{"a second key opens what the first sealed once rotated", testCodec(t, 2, 1), BucketEvents, key1, rec, true},
		{"under another key it fails its tag", c, BucketEvents, key2, rec, false},
		{"in another bucket it fails its tag", c, BucketDead, key1, rec, false},
		{"a flipped byte fails its tag", c, BucketEvents, key1, flipped, false},
		{"without its key it is refused", testCodec(t, 2), BucketEvents, key1, rec, false},
		{"without any key it is refused", NewCodec(nil), BucketEvents, key1, rec, false},
		{"a plain record in an encrypted queue is refused", c, BucketEvents, key1, EncodeRecord(payload), false},
		{"a plain record opens without keys", NewCodec(nil), BucketEvents, key1, EncodeRecord(payload), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Scratch
			dst, p, err := tc.codec.Open([]byte("x"), tc.bucket, tc.key, tc.rec, &s)
			if tc.ok {
				if err != nil || !bytes.Equal(p, payload) || !bytes.Equal(dst, append([]byte("x"), payload...)) {
					t.Fatalf("open = %q, %v; want the payload appended", p, err)
				}
				return
			}
			if !errors.Is(err, errs.ErrChecksum) || string(dst) != "x" {
				t.Fatalf("open = %q, %v; want errs.ErrChecksum and dst unchanged", dst, err)
			}
		})
	}
}

func TestCodec_SealedRecordHidesThePayloadAndNamesItsKey(t *testing.T) {
	c := testCodec(t, 1)
	payload := []byte(`{"traits":{"email":"jane@example.com"}}`)
	rec := c.Encode(BucketEvents, key1, payload)
	if bytes.Contains(rec, []byte("jane")) {
		t.Fatal("the sealed record holds the payload in the clear")
	}
	if id, ok := SealedBy(rec); !ok || id != c.Keys().IDs()[0] || PayloadLen(rec) != len(payload) || len(rec) != len(payload)+SealedOverhead {
		t.Fatalf("SealedBy = %s, %v; PayloadLen = %d", id, ok, PayloadLen(rec))
	}
	if again := c.Encode(BucketEvents, key1, payload); bytes.Equal(again, rec) {
		t.Fatal("two seals of one payload are the same bytes: the nonce is not fresh")
	}
}

// FuzzOpenSealed feeds arbitrary records to the reader of sealed records: it never panics, a
// record it opens was sealed by a configured key for that bucket and key, and what it refuses
// is errs.ErrChecksum with dst unchanged.
func FuzzOpenSealed(f *testing.F) {
	c := testCodec(f, 1, 2)
	f.Add(c.Encode(BucketEvents, key1, []byte(`{"a":1}`)), true, false)
	f.Add(c.Encode(BucketDead, key1, EncodeDead([]byte(`{}`), [][]byte{[]byte(`{"a":1}`)})), false, false)
	f.Add(testCodec(f, 2).Encode(BucketEvents, key2, nil), true, true)
	f.Add(EncodeRecord([]byte(`{"a":1}`)), true, false)
	f.Add([]byte{2}, true, false)
	f.Fuzz(func(t *testing.T, rec []byte, events, otherKey bool) {
		bucket, key := BucketDead, key1
		if events {
			bucket = BucketEvents
		}
		if otherKey {
			key = key2
		}
		var s Scratch
		dst, p, err := c.Open([]byte("x"), bucket, key, rec, &s)
		if err != nil {
			if !errors.Is(err, errs.ErrChecksum) || string(dst) != "x" {
				t.Fatalf("refused with %v (dst %q), want errs.ErrChecksum and dst unchanged", err, dst)
			}
			return
		}
		if _, sealed := SealedBy(rec); !sealed || len(p) != PayloadLen(rec) {
			t.Fatalf("opened a record that is not sealed, or a payload of %d bytes from a record that says %d", len(p), PayloadLen(rec))
		}
		if _, _, err := c.Open(nil, bucket, key2[:19], rec, &s); err == nil {
			t.Fatal("a record opened under two keys")
		}
	})
}

// TestNoncesAreConsecutiveFromARandomStart checks the nonce sequence AppendUnsealed uses: each
// nonce is the previous one plus one (carrying across bytes, wrapping at 2^96), and a new random
// start is drawn once a run is used up and for every new Nonces.
func TestNoncesAreConsecutiveFromARandomStart(t *testing.T) {
	var a, b Nonces
	var first, second, other [nonceSize]byte
	a.put(first[:])
	a.put(second[:])
	b.put(other[:])
	if first == other {
		t.Fatal("two Nonces started at the same value")
	}
	if want := plusOne(first); second != want {
		t.Fatalf("second nonce %x, want %x", second, want)
	}
	for _, tc := range []struct {
		name       string
		next, want [nonceSize]byte
	}{
		{"carry", [nonceSize]byte{10: 1, 11: 0xff}, [nonceSize]byte{10: 2, 11: 0}},
		{"wrap", [nonceSize]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [nonceSize]byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Nonces{next: tc.next, left: 2}
			var got [nonceSize]byte
			n.put(got[:])
			n.put(got[:])
			if got != tc.want {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
		})
	}
	t.Run("new start after a run", func(t *testing.T) {
		n := Nonces{left: 1}
		var last, next [nonceSize]byte
		n.put(last[:])
		n.put(next[:])
		if next == plusOne(last) || n.left != nonceRun-1 {
			t.Fatalf("no new start after the run: %x then %x (left %d)", last, next, n.left)
		}
	})
}

func plusOne(v [nonceSize]byte) [nonceSize]byte {
	for i := nonceSize - 1; i >= 0; i-- {
		v[i]++
		if v[i] != 0 {
			break
		}
	}
	return v
}

// BenchmarkCodec is the cost of one 545-byte event's record, written (AppendUnsealed on the
// caller's goroutine, then Seal once the writer has put it, on the store's sealer) and read
// (Open into a block), plain and sealed.
func BenchmarkCodec(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 545)
	for _, tc := range []struct {
		name  string
		codec Codec
	}{{"plain", NewCodec(nil)}, {"sealed", testCodec(b, 1)}} {
		b.Run(tc.name+"/write", func(b *testing.B) {
			var s Scratch
			var nonces Nonces
			buf := make([]byte, 0, 1024)
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				rec := tc.codec.AppendUnsealed(buf[:0], payload, &nonces)
				tc.codec.Seal(rec, BucketEvents, key1, &s)
			}
		})
		b.Run(tc.name+"/read", func(b *testing.B) {
			var s Scratch
			rec := tc.codec.Encode(BucketEvents, key1, payload)
			buf := make([]byte, 0, 1024)
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tc.codec.Open(buf[:0], BucketEvents, key1, rec, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
