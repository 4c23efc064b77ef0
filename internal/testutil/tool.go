package testutil

import (
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the tests run under CI, as CI systems announce it: the environment
// variable CI set to a true value (CI=true, CI=1).
func InCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// MissingTool ends a test that cannot run because the tool it drives (a browser, promtool) is
// not installed. Locally the test skips with why, so a developer without the tool still runs
// the rest of the suite. Under CI (see InCI) it fails instead: CI installs every tool, and a
// run that skipped the test would go green without ever checking what it guards.
func MissingTool(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s; CI must run this test (CI=%s), so a missing tool fails it", why, os.Getenv("CI"))
		return
	}
	t.Skipf("%s; skipped (under CI=true it fails)", why)
}
