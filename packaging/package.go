package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// Where the packages put things. The unit (docs/deploy/outbox.service) names the same paths.
const (
	pkgBinary  = "/usr/bin/outbox"
	pkgConfig  = "/etc/outbox/config.yaml"
	pkgUnit    = "/usr/lib/systemd/system/outbox.service"
	pkgLicence = "/usr/share/doc/outbox/LICENSE"
	pkgDataDir = "/var/lib/outbox"
)

// packageInput is what a package is built from.
type packageInput struct {
	Bin     string // the outbox binary (linux, the package's architecture)
	Root    string // the repository root: config.example.yaml, LICENSE, docs/deploy/outbox.service
	Scripts string // the directory of postinstall.sh, preremove.sh, postremove.sh
	Arch    string // GOARCH of the binary; nfpm maps it to each format's name
	Version string // the binary's own version (binaryVersion)
}

// packageInfo is the nfpm description of the outbox package. nfpm's preparation rewrites the
// contents in place, so each format gets a fresh one.
func packageInfo(in packageInput) *nfpm.Info {
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode}}
	}
	config := file(filepath.Join(in.Root, "config.example.yaml"), pkgConfig, 0o644)
	// Kept on upgrade when the operator has changed it (deb conffile; rpm %config(noreplace)).
	config.Type = files.TypeConfigNoReplace
	return nfpm.WithDefaults(&nfpm.Info{
		Name:          "outbox",
		Arch:          in.Arch,
		Platform:      "linux",
		Version:       packageVersion(in.Version),
		VersionSchema: "none",
		Release:       "1",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "outbox maintainers <maintainers@outboxhq.dev>",
		Description: "Durable, batching uploader for analytics events.\n" +
			"Applications hand outbox events over Segment's tracking API on loopback; it stores them\n" +
			"on disk before it answers, and uploads them in batches to Segment's HTTP API or Kafka.",
		Vendor:   "outbox",
		Homepage: "https://github.com/outboxhq/outbox",
		License:  "Apache-2.0",
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				file(in.Bin, pkgBinary, 0o755),
				config,
				file(filepath.Join(in.Root, "docs", "deploy", "outbox.service"), pkgUnit, 0o644),
				file(filepath.Join(in.Root, "LICENSE"), pkgLicence, 0o644),
				// The unit's StateDirectory= owns and moves it (DynamicUser); the package
				// creates it so the path exists before the first start, and keeps it on removal.
				{Destination: pkgDataDir, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o750}},
			},
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(in.Scripts, "postinstall.sh"),
				PreRemove:   filepath.Join(in.Scripts, "preremove.sh"),
				PostRemove:  filepath.Join(in.Scripts, "postremove.sh"),
			},
		},
	})
}

// buildPackage writes the package of format ("deb" or "rpm") into outDir and returns its path.
func buildPackage(in packageInput, format, outDir string) (string, error) {
	info := packageInfo(in)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", fmt.Errorf("%s package: %w", format, err)
	}
	if err := nfpm.Validate(info); err != nil {
		return "", fmt.Errorf("%s package: %w", format, err)
	}
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info.Target = pkgr.ConventionalFileName(info)
	path := filepath.Join(outDir, info.Target)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := pkgr.Package(info, f); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return "", fmt.Errorf("%s package: %w", format, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, nil
}

// defaultArch is the architecture of the binary when -arch is not given.
func defaultArch() string { return runtime.GOARCH }
