package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion_UsesBuildInfoWhenTheVersionIsNotStamped(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-11-29T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	cases := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		wants  []string
		avoids []string
	}{
		{name: "a stamped version wins over the module version",
			linked: "v1.4.0", bi: &debug.BuildInfo{Main: debug.Module{Path: "github.com/outboxhq/outbox", Version: "v1.3.0"}},
			wants: []string{"outbox v1.4.0\n", "module:   github.com/outboxhq/outbox v1.3.0"}},
		{name: "go install @version gives the module version",
			linked: "dev", bi: &debug.BuildInfo{Main: debug.Module{Path: "github.com/outboxhq/outbox", Version: "v1.3.0"}},
			wants: []string{"outbox v1.3.0\n"}, avoids: []string{"outbox dev"}},
		{name: "a plain go build in a checkout shows the revision, its time and the dirty flag",
			linked: "dev", bi: &debug.BuildInfo{Main: debug.Module{Path: "github.com/outboxhq/outbox", Version: "(devel)"}, Settings: vcs},
			wants: []string{"outbox dev (git 0123456789ab, modified)\n", "revision: " + rev, "time:     2026-11-29T10:00:00Z", "modified: true", "module:   github.com/outboxhq/outbox (devel)"}},
		{name: "no version control information is said, not left out",
			linked: "dev", bi: &debug.BuildInfo{Main: debug.Module{Path: "github.com/outboxhq/outbox", Version: "(devel)"}},
			wants: []string{"outbox dev\n", "revision: unknown", "-buildvcs=false"}},
		{name: "no build information at all",
			linked: "dev", bi: nil,
			wants: []string{"outbox dev\n", "revision: unknown", "go:       go"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			newBuildInfo(tc.linked, tc.bi).write(&out)
			for _, w := range tc.wants {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output does not contain %q:\n%s", w, out.String())
				}
			}
			for _, a := range tc.avoids {
				if strings.Contains(out.String(), a) {
					t.Errorf("output contains %q:\n%s", a, out.String())
				}
			}
		})
	}
}

func TestVersionCommand_PrintsVersionRevisionAndGo(t *testing.T) {
	out, err := runRoot(t, nil, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"outbox ", "revision: ", "go:       go"} {
		if !strings.Contains(out, w) {
			t.Errorf("outbox version output does not contain %q:\n%s", w, out)
		}
	}
}
