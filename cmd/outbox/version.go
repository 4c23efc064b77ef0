package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/outboxhq/outbox/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		Long: `Print outbox's version, the Go version it was built with, and the source revision when
the build recorded one. The version is also sent as User-Agent: outbox/<version> on uploads.`,
		Example: `  outbox version`,
		Args:    argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "outbox %s\n", version.Version)
			fmt.Fprintf(out, "go:       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision", "vcs.time", "vcs.modified":
						fmt.Fprintf(out, "%-9s %s\n", s.Key[len("vcs."):]+":", s.Value)
					}
				}
			}
			return nil
		},
	}
}
