package kafka

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// idempotentInFlight is how many produce requests franz-go's idempotent producer keeps in
// flight per broker: Kafka's own ceiling for idempotence (brokers track the last five batches
// of each producer to deduplicate), fixed in kgo.
const idempotentInFlight = 5

// MaxInFlight is how many batches the destination takes at once: the producer's own limit of
// produce requests in flight per broker (5 for the idempotent producer, or what
// kgo.MaxProduceRequestsInflightPerBroker set when WithClientOptions turned idempotence off).
// With the messageId or userId key every batch spreads over the partitions, so each batch in
// flight is about one produce request to each broker: more batches than that would wait in
// kgo's buffer, reaching the cluster no sooner while their upload.timeout runs. The worker
// also applies upload.concurrency and upload.max_concurrency below this bound.
func (d *Destination) MaxInFlight() int { return d.maxInFlight }

// producerInFlight reads the producer's in-flight limit from the built client.
func producerInFlight(cl *kgo.Client) int {
	if off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); !off {
		return idempotentInFlight
	}
	if n, _ := cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker).(int); n > 0 {
		return n
	}
	return 1
}

// attempts is the set of Sends in progress. kgo's broker hooks are about the client, not one
// record: a produce request carries the records of every Send that kgo batched into it, and a
// throttle or a refused login holds for all. So each hook event is given to every attempt in
// progress. For "written" that errs on the safe side: an attempt may be marked as possibly
// delivered (maybe_sent, counted as a try if Close cuts it) when the request written held
// only other batches' records, never the other way round.
type attempts struct {
	mu  sync.Mutex
	set map[*attemptState]struct{}
}

func (a *attempts) add(st *attemptState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set == nil {
		a.set = map[*attemptState]struct{}{}
	}
	a.set[st] = struct{}{}
}

func (a *attempts) remove(st *attemptState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.set, st)
}

// each calls fn for every attempt in progress, under the set's lock: fn must not block.
func (a *attempts) each(fn func(*attemptState)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for st := range a.set {
		fn(st)
	}
}
