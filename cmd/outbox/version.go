package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/outboxhq/outbox/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		Long: `Print outbox's version, the module and source revision it was built from, and the Go
version. The version is the one stamped at link time ('make build' uses git describe); a plain
'go build' leaves it "dev", and then the module version (set by 'go install ...@v1.2.3') and the
git revision Go recorded stand in. A build without version control information (-buildvcs=false,
or outside a git checkout) says so. The version is also sent as User-Agent: outbox/<version> on
uploads.`,
		Example: `  outbox version`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				bi = nil
			}
			newBuildInfo(version.Version, bi).write(cmd.OutOrStdout())
			return nil
		},
	}
}

// buildInfo is what `outbox version` prints.
type buildInfo struct {
	version  string // the link-time version, else the module version, else "dev"
	module   string // module path and version; "" when unknown
	revision string // vcs.revision; "" when the build recorded none
	time     string // vcs.time
	modified bool   // vcs.modified: the checkout had uncommitted changes
	goVer    string // Go version and platform
}

// newBuildInfo combines the link-time version (internal/version.Version) with what the Go
// toolchain recorded in the binary; bi may be nil (no build information).
func newBuildInfo(linked string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{version: linked, goVer: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return b
	}
	if bi.GoVersion != "" {
		b.goVer = bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	modVersion := bi.Main.Version
	if modVersion == "(devel)" {
		modVersion = ""
	}
	if bi.Main.Path != "" {
		b.module = bi.Main.Path + " " + orText(modVersion, "(devel)")
	}
	if b.version == "dev" && modVersion != "" {
		b.version = modVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// write prints the build information, one "name: value" line each.
func (b buildInfo) write(w io.Writer) {
	head := b.version
	if b.version == "dev" && b.revision != "" {
		head += " (git " + short(b.revision)
		if b.modified {
			head += ", modified"
		}
		head += ")"
	}
	fmt.Fprintf(w, "outbox %s\n", head)
	if b.module != "" {
		fmt.Fprintf(w, "module:   %s\n", b.module)
	}
	if b.revision == "" {
		fmt.Fprintln(w, "revision: unknown (built without version control information: -buildvcs=false or outside a git checkout)")
	} else {
		fmt.Fprintf(w, "revision: %s\n", b.revision)
		if b.time != "" {
			fmt.Fprintf(w, "time:     %s\n", b.time)
		}
		fmt.Fprintf(w, "modified: %t\n", b.modified)
	}
	fmt.Fprintf(w, "go:       %s\n", b.goVer)
}

// short is a revision cut to 12 characters, as git shows it.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
