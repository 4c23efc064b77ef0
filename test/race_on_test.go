//go:build race

package test_test

// raceEnabled is true when the tests run with -race; the binary under test is then built with
// -race too, so data races in the agent show up under real signals and crashes.
const raceEnabled = true
