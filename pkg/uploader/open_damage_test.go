package uploader_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// rootPage returns the root page of bbolt's newest meta page, which every read goes through.
func rootPage(b []byte) []byte {
	ps := os.Getpagesize()
	meta := b[16:]
	if binary.LittleEndian.Uint64(b[ps+16+48:]) > binary.LittleEndian.Uint64(b[16+48:]) {
		meta = b[ps+16:]
	}
	root := int(binary.LittleEndian.Uint64(meta[16:]))
	return b[root*ps : (root+1)*ps]
}

func TestOpen_DamagedQueueFileIsACorruptErrorNamingRecover_FileUnchanged(t *testing.T) {
	cases := []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"the root page zeroed", func(b []byte) []byte { clear(rootPage(b)); return b }},
		{"the root page of random-looking bytes", func(b []byte) []byte {
			for i, p := 0, rootPage(b); i < len(p); i++ {
				p[i] = byte(i*31 + 7)
			}
			return b
		}},
		{"the header zeroed", func(b []byte) []byte { clear(b[:4096]); return b }},
		{"truncated to a third", func(b []byte) []byte { return b[:len(b)/3] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q, err := queue.Open(dir, queue.Config{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				var evs [][]byte
				for j := range 100 {
					evs = append(evs, fmt.Appendf(nil, `{"type":"track","event":"e","messageId":"m-%d-%d","properties":{"pad":"%0150d"}}`, i, j, j))
				}
				if err := q.Enqueue(context.Background(), evs...); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			path := testutil.DataFile(dir)
			data, _ := os.ReadFile(path)
			data = tc.damage(data)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}

			cfg := uploader.DefaultConfig()
			cfg.DataDir = dir
			cfg.Upload.Endpoint = "http://127.0.0.1:9/v1/batch"
			cfg.Upload.WriteKey = "wk"
			c, err := segment.Open(cfg)
			if err == nil {
				_ = c.Close(context.Background())
			}
			var ce *queue.CorruptError
			if !errors.As(err, &ce) || ce.Path != path || !strings.Contains(err.Error(), "outbox recover") {
				t.Fatalf("Open on a damaged file: %v, want a *queue.CorruptError naming %s and outbox recover", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatal("Open changed the damaged file")
			}
		})
	}
}
