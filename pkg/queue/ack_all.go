package queue

import (
	"context"
	"fmt"
)

// AckAll deletes the events of several batches in one transaction (one fsync), as Ack does
// for one: a consumer that delivers batch after batch acknowledges the ones whose acks would
// otherwise wait for each other's commits together. The batches are given in queue order; a
// saved retry state is cleared when it belongs to the first of them (only the head batch has
// one).
func (q *Queue) AckAll(batches ...*Batch) error {
	var keys [][]byte
	for _, b := range batches {
		if b != nil {
			keys = append(keys, b.keys...)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := q.s.Delete(context.Background(), keys); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return nil
}
