package queue

import "sync"

// drr chooses the source of the next lease by deficit round robin, weighted by bytes: sources
// with work take turns; in its turn a source is credited quantum bytes and keeps the turn
// while its credit (deficit) is positive, each lease charging the bytes it took. Over time
// every source with work leases about the same bytes, whatever its backlog, so a source with a
// large backlog delays another's fresh events by about one turn (one batch), not by its
// backlog. A source that runs out of work loses its credit: idle time does not bank bytes.
//
// A lease may take more bytes than the credit left (a batch is cut by events and bytes, not by
// the credit), which leaves the credit negative: that source's next turns make it up.
type drr struct {
	quantum int64

	mu      sync.Mutex // guards the fields below
	ring    []string   // every source seen, in the order they were first seen
	deficit map[string]int64
	at      int  // the source whose turn it is
	fresh   bool // the turn at at has not been credited yet
}

func newDRR(quantum int64) *drr {
	return &drr{quantum: quantum, deficit: map[string]int64{}, fresh: true}
}

// next returns the source whose turn it is among those with work (active), "" when none has
// any. The order of active does not matter.
func (d *drr) next(active []string) string {
	if len(active) == 0 {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	has := make(map[string]bool, len(active))
	for _, name := range active {
		has[name] = true
		if _, ok := d.deficit[name]; !ok {
			d.deficit[name] = 0
			d.ring = append(d.ring, name)
		}
	}
	// Each round credits every source with work one quantum, and a credit is at most one
	// lease below zero, so a source with work gets its turn within a few rounds; the bound
	// only keeps a mistake from spinning.
	for range 64 * len(d.ring) {
		name := d.ring[d.at]
		if !has[name] {
			d.deficit[name] = 0
		} else {
			if d.fresh { // its turn begins: credit it
				d.fresh = false
				d.deficit[name] += d.quantum
			}
			if d.deficit[name] > 0 {
				return name
			}
		}
		d.at = (d.at + 1) % len(d.ring)
		d.fresh = true
	}
	return active[0]
}

// charge takes a lease of bytes from source's credit.
func (d *drr) charge(source string, bytes int64) {
	d.mu.Lock()
	d.deficit[source] -= bytes
	d.mu.Unlock()
}
