// Package version holds the build's version string, set at link time:
//
//	go build -ldflags "-X github.com/outboxhq/outbox/internal/version.Version=v1.2.3"
package version

// Version is the outbox version; "dev" for builds that did not set it.
var Version = "dev"

// UserAgent is the User-Agent outbox sends on uploads: "outbox/<version>".
func UserAgent() string { return "outbox/" + Version }
