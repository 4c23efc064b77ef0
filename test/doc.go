// Package test holds black-box tests of the built outbox binary: TestMain builds cmd/outbox once,
// and each test runs it as a subprocess on free loopback ports against an in-test pkg/sink
// collector, sends it events over plain HTTP, signals or kills it, and counts what arrived.
//
// Run them with: go test -race ./test/
package test
