// Package delivery is the seam between outbox's worker (pkg/uploader) and a destination: what a
// destination is (Destination, and the optional BoundedDestination and PreparingDestination),
// the batch it is handed (Batch), and what it says about one attempt (Outcome, in exactly one
// Class). It imports nothing of outbox, so the worker and every destination — HTTP
// (pkg/httpdest), Kafka (pkg/kafka) or an application's own — share one model of an attempt
// without depending on one another.
//
// The worker owns the queue side (leases, acks, retry budgets, splits, dead letters); a
// destination only sends one batch and classifies what happened. The classes are the product's
// classification: a destination maps its own answers (HTTP statuses, Kafka errors) onto them,
// and the worker routes every destination's outcomes the same way.
//
// Network failures carry a NetErrorClass, never_sent or maybe_sent, so operators can see where
// duplicates may come from; NetworkErrorClass derives it from a Go network error's type.
package delivery
