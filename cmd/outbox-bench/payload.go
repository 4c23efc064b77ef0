package main

import (
	"bytes"
	"fmt"

	"github.com/outboxhq/outbox/pkg/event/eventtest"
)

// payloadFunc makes event i of a run: 535 bytes, with a distinct messageId per i.
type payloadFunc func(i int) []byte

// payloads are the -payload choices.
func payloads() map[string]payloadFunc {
	return map[string]payloadFunc{
		"track":  eventtest.Track,
		"varied": variedTrack,
	}
}

// payloadFor returns the generator named by -payload.
func payloadFor(name string) (payloadFunc, error) {
	if f, ok := payloads()[name]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("-payload %q: want track or varied", name)
}

// notePrefix opens the padding property of eventtest.Track.
const notePrefix = `"note":"`

// variedTrack is eventtest.Track(i) (same size, same fields, messageId "msg-<i>") with its
// padding of x's replaced by pseudo-random letters and digits drawn from i. Batches of
// Track events are near copies of each other that gzip shrinks 40-fold, so gzip would cost
// almost nothing; varied padding gives about 8:1, closer to real analytics traffic.
func variedTrack(i int) []byte {
	ev := eventtest.Track(i)
	at := bytes.LastIndex(ev, []byte(notePrefix))
	if at < 0 {
		return ev
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	x := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for j := at + len(notePrefix); j < len(ev) && ev[j] == 'x'; j++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		ev[j] = alphabet[x%uint64(len(alphabet))]
	}
	return ev
}
