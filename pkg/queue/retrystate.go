package queue

import (
	"encoding/json"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// retryJSON is a budget.State as saved with its batch: short names, because one is written
// per failed attempt, and times as Unix nanoseconds (0: none), which JSON keeps exactly. The
// store keeps the bytes without reading them.
type retryJSON struct {
	Attempts       int   `json:"a"`
	Retries        int   `json:"r"`
	BackoffStart   int64 `json:"b,omitempty"`
	RateLimitStart int64 `json:"l,omitempty"`
}

func encodeRetry(st budget.State) []byte {
	b, _ := json.Marshal(retryJSON{st.Attempts, st.Retries, unixNano(st.BackoffStart), unixNano(st.RateLimitStart)})
	return b
}

func decodeRetry(b []byte) (budget.State, error) {
	var j retryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return budget.State{}, err
	}
	return budget.State{Attempts: j.Attempts, Retries: j.Retries,
		BackoffStart: fromUnixNano(j.BackoffStart), RateLimitStart: fromUnixNano(j.RateLimitStart)}, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
