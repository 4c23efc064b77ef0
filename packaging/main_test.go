package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testVersion is stamped into the test binary, as `make build` stamps git describe.
const testVersion = "v1.2.3-rc1"

// testBin is a static outbox binary built from the repository by TestMain.
var testBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outbox-package-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBin = filepath.Join(dir, "outbox")
	build := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-X github.com/outboxhq/outbox/internal/version.Version="+testVersion, "-o", testBin, "./cmd/outbox")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building outbox:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestPackageVersion_IsOneDpkgAndRpmAcceptAndOrder(t *testing.T) {
	cases := []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"dev", "0.0.0~dev"},
		{"7794492-dirty", "0.0.0~7794492~dirty"},
		{"v2.0.0-4-gabc1234", "2.0.0~4~gabc1234"},
		{"d348805-dirty", "0.0.0~d348805~dirty"},
		{"", "0.0.0~"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := packageVersion(tc.in); got != tc.want {
				t.Errorf("packageVersion(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestBinaryVersion_IsWhatTheBinaryWasStampedWith(t *testing.T) {
	v, err := binaryVersion(testBin)
	if err != nil {
		t.Fatal(err)
	}
	if v != testVersion {
		t.Errorf("binaryVersion = %q, want %q", v, testVersion)
	}
}
