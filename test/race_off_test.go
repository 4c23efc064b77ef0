//go:build !race

package test_test

// raceEnabled is true when the tests run with -race (see race_on_test.go).
const raceEnabled = false
