package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "outbox-package:", err)
		os.Exit(1)
	}
}

const usage = `usage: outbox-package deb,rpm|image [flags]
  deb,rpm  build the .deb and .rpm packages (either one alone: deb, rpm)
  image    build the OCI image tarball (docker load / podman load)`

func run(args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New(usage)
	}
	what := args[0]
	fs := flag.NewFlagSet("outbox-package", flag.ContinueOnError)
	bin := fs.String("bin", "../bin/outbox", "the outbox binary to package")
	root := fs.String("root", "..", "the repository root (config.example.yaml, LICENSE, docs/deploy/outbox.service)")
	out := fs.String("out", "../dist", "where the packages or the image tarball go")
	arch := fs.String("arch", defaultArch(), "GOARCH of the binary")
	repo := fs.String("repo", "ghcr.io/outboxhq/outbox", "image name (image only)")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA roots put in the image (image only)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	version, err := binaryVersion(*bin)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if what == "image" {
		path := filepath.Join(*out, "outbox-image.tar")
		tag, err := buildImage(imageInput{Bin: *bin, CABundle: *ca, Arch: *arch, Version: version, Repo: *repo}, path)
		if err != nil {
			return err
		}
		fmt.Printf("%s (%s): docker load -i %s\n", path, tag, path)
		return nil
	}
	in := packageInput{Bin: *bin, Root: *root, Scripts: filepath.Join(*root, "packaging", "scripts"), Arch: *arch, Version: version}
	for _, format := range strings.Split(what, ",") {
		if format != "deb" && format != "rpm" {
			return fmt.Errorf("unknown format %q\n%s", format, usage)
		}
		path, err := buildPackage(in, format, *out)
		if err != nil {
			return err
		}
		fmt.Println(path)
	}
	return nil
}
