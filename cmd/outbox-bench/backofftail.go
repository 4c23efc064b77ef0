package main

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// backoffTail models the best an outbox client can read against a collector that fails each
// request with chance p, over a run as short as the side-by-side ones: it sends its batches at
// its local rate, with no pause of any kind (no breaker, no limit), and each failed batch retries
// after its own counted backoff (the retry defaults' curve and jitter, budget.Backoff), the
// others going on. The run ends when its last batch is accepted. Under 20 % failures about one
// batch in 125 fails three times in a row and one in 625 four times, waiting 1.75–3.5 s and
// 3.75–7.5 s of backoff; a run of 400 batches at the local rate lasts about 2 s, so whichever
// batch is unluckiest decides the run's span more than the rate of delivery does.
type backoffTail struct {
	batches int           // batches in the run
	span    time.Duration // the run without failures: its batches sent at the local rate
	p       float64       // chance of a failure per request
	draws   int           // runs drawn
	seed    uint64
}

// ratio is the median, over the draws, of the run's rate against its rate without failures.
func (m backoffTail) ratio() float64 {
	if m.batches <= 0 || m.span <= 0 || m.draws <= 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(m.seed, m.seed^0x9e3779b97f4a7c15))
	ratios := make([]float64, m.draws)
	for d := range ratios {
		var end time.Duration
		for i := range m.batches {
			at := m.span * time.Duration(i+1) / time.Duration(m.batches)
			b := budget.NewBackoff(budget.DefaultConfig(), budget.SystemClock{}, rng.Float64)
			for rng.Float64() < m.p {
				wait, err := b.Next()
				if err != nil { // dead-lettered: the run ends without it
					break
				}
				at += wait
			}
			end = max(end, at)
		}
		ratios[d] = m.span.Seconds() / end.Seconds()
	}
	slices.Sort(ratios)
	return ratios[(len(ratios)-1)/2]
}
