package sink_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/outboxhq/outbox/pkg/sink"
)

// A sink that answers the first batch with 429 + Retry-After: 1, then accepts.
func ExampleStart() {
	script, err := sink.ParseFaults("429:ra=1")
	if err != nil {
		panic(err)
	}
	s, err := sink.Start("127.0.0.1:0", sink.Options{Script: script})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	batch := []byte(`{"batch":[{"type":"track","event":"Signed Up","userId":"u1","messageId":"m1"}]}`)
	for range 2 {
		resp, err := http.Post(s.URL()+"/v1/batch", "application/json", bytes.NewReader(batch))
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("%d Retry-After=%q\n", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := s.WaitEvents(context.Background(), 1); err != nil {
		panic(err)
	}
	st := s.Stats()
	fmt.Println("requests:", st.Requests, "accepted events:", st.Unique)
	// Output:
	// 429 Retry-After="1"
	// 200 Retry-After=""
	// requests: 2 accepted events: 1
}
