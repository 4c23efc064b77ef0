package sink

import (
	"fmt"
	"math/rand/v2"
)

// Chance is a response played with a probability when the script's Steps are used up.
type Chance struct {
	// P is the probability in [0, 1] (0.2 for 20%).
	P float64
	// Response is what is played when the chance is drawn.
	Response Response
}

// Script decides the answer to each batch request, in this order:
//
//  1. Steps, one per request, in order, until they are used up;
//  2. then, for each request, one uniform draw u in [0,1) from a PCG generator seeded with
//     Seed: the first Chance whose cumulative probability exceeds u is played;
//  3. otherwise Default (the zero Response is 200 {"success":true}).
//
// The zero Script accepts everything. Requests that fail auth or are not POSTs to a batch route
// do not consume a step.
type Script struct {
	Steps   []Response
	Chances []Chance
	Default Response
	// Seed seeds the generator of Chances; the same seed plays the same sequence.
	Seed uint64
}

// Validate checks that the probabilities are in range and sum to at most 1.
func (s Script) Validate() error {
	sum := 0.0
	for i, c := range s.Chances {
		if c.P < 0 || c.P > 1 {
			return fmt.Errorf("%w: chance %d: probability %v is outside [0,1]", ErrBadFaultSpec, i, c.P)
		}
		sum += c.P
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("%w: probabilities sum to %.0f%%, more than 100%%", ErrBadFaultSpec, sum*100)
	}
	return nil
}

// player is the mutable state of a Script being played. Its owner guards it.
type player struct {
	script Script
	next   int
	rng    *rand.Rand
}

func newPlayer(s Script) player {
	return player{script: s, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))}
}

// nextResponse consumes one step of the script and returns the response to play.
func (p *player) nextResponse() Response {
	if p.next < len(p.script.Steps) {
		r := p.script.Steps[p.next]
		p.next++
		return r
	}
	if len(p.script.Chances) > 0 {
		u := p.rng.Float64()
		acc := 0.0
		for _, c := range p.script.Chances {
			acc += c.P
			if u < acc {
				return c.Response
			}
		}
	}
	return p.script.Default
}

// remaining is how many Steps are left to play.
func (p *player) remaining() int { return len(p.script.Steps) - p.next }
