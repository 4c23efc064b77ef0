package sinktest_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestStart_ServesUntilTheTestEnds(t *testing.T) {
	var s *sink.Server
	t.Run("inner", func(t *testing.T) {
		s = sinktest.StartScript(t, "503,201")
		for _, want := range []int{503, 201} {
			resp, err := http.Post(s.URL()+"/v1/batch", "application/json", bytes.NewReader([]byte(`{"batch":[{"messageId":"a"}]}`)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
		}
	})
	if _, err := http.Post(s.URL()+"/v1/batch", "application/json", nil); err == nil {
		t.Error("sink still serving after its test ended")
	}
	if st := s.Stats(); st.Batches != 1 {
		t.Errorf("stats %+v, want one accepted batch readable after close", st)
	}
}
