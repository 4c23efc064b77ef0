package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// releaseVersion is how a tagged release's version starts: MAJOR.MINOR.
var releaseVersion = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+`)

// binaryVersion is the version the binary reports: the first line of `outbox version` is
// "outbox <version>", the value of internal/version.Version stamped at link time.
func binaryVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w; build it first (make build)", bin, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "outbox ")
	if !ok || v == "" {
		return "", fmt.Errorf("%s version printed %q, want \"outbox <version>\"", bin, first)
	}
	return v, nil
}

// packageVersion turns the binary's version into one dpkg and rpm both order correctly and
// accept: a leading "v" goes ("v1.2.3" → "1.2.3"), a hyphen becomes "~" ("1.2.3-rc1" →
// "1.2.3~rc1", which sorts before 1.2.3 in both), and a version that does not start with
// MAJOR.MINOR (a build from an untagged commit: "dev", "7794492-dirty", a commit hash that may
// start with digits) becomes 0.0.0~ plus it, so any tagged release upgrades it.
func packageVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '.', r == '+':
			return r
		}
		return '~'
	}, v)
	if !releaseVersion.MatchString(clean) {
		return "0.0.0~" + clean
	}
	return clean
}
