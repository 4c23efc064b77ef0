package sink_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// lockedWriter is a strings.Builder safe for the sink's request goroutines.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestServer_Print_WritesEachAcceptedEventOnOneLine(t *testing.T) {
	tests := []struct {
		name   string
		faults string
		body   string
		gzip   bool
		want   []string
	}{
		{
			name: "each event of a batch is a line, as it arrived",
			body: `{"batch":[{"type":"track","event":"Signed Up","properties":{"plan":"pro"}},{"type":"identify","userId":"u1"}]}`,
			want: []string{`{"type":"track","event":"Signed Up","properties":{"plan":"pro"}}`, `{"type":"identify","userId":"u1"}`},
		},
		{
			name: "a gzipped batch prints the same",
			body: `{"batch":[{"type":"track","event":"Paid"}]}`,
			gzip: true,
			want: []string{`{"type":"track","event":"Paid"}`},
		},
		{
			name: "an event spread over lines is compacted onto one",
			body: "{\"batch\":[{\n  \"type\": \"track\",\n  \"event\": \"Paid\"\n}]}",
			want: []string{`{"type":"track","event":"Paid"}`},
		},
		{
			name:   "a rejected batch prints nothing",
			faults: "503",
			body:   `{"batch":[{"type":"track","event":"Paid"}]}`,
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, err := sink.ParseFaults(tt.faults)
			if err != nil {
				t.Fatal(err)
			}
			var out lockedWriter
			s := sinktest.Start(t, sink.Options{Print: &out, Script: script})
			b, hdr := []byte(tt.body), map[string]string(nil)
			if tt.gzip {
				b, hdr = gzipped(t, b), map[string]string{"Content-Encoding": "gzip"}
			}
			mustPost(t, s.URL()+"/v1/batch", b, hdr)
			want := ""
			if len(tt.want) > 0 {
				want = strings.Join(tt.want, "\n") + "\n"
			}
			if got := out.String(); got != want {
				t.Errorf("printed:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
