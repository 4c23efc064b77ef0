package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and how it runs.
const (
	imageBinary   = "/usr/bin/outbox"
	imageDataDir  = "/var/lib/outbox"
	imageCABundle = "/etc/ssl/certs/ca-certificates.crt" // where Go's crypto/x509 looks on Linux
	imageUID      = 65532                                // "nonroot", as distroless images have it
	imagePort     = "8089/tcp"                           // ingest.listen's default port
)

// imageInput is what the image is built from.
type imageInput struct {
	Bin      string // a static (CGO_ENABLED=0) linux outbox binary
	CABundle string // PEM roots for HTTPS uploads; an empty base has none of its own
	Arch     string // GOARCH of the binary
	Version  string // the binary's own version; the tag
	Repo     string // the image name, e.g. ghcr.io/outboxhq/outbox
}

// buildImage writes the image as a `docker save`-style tarball (manifest.json with the tag,
// the config and the layer: what every `docker load` and `podman load` read) to path, tagged
// Repo:version, and returns the tag. The layer is uncompressed in the
// tarball; `docker push`, `podman push` or `skopeo copy docker-archive:...` compress it.
func buildImage(in imageInput, path string) (string, error) {
	layer, err := imageLayer(in)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", in.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()} // reproducible: same binary, same digest
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", imageUID, imageUID),
		Entrypoint: []string{imageBinary, "run"},
		// The container's loopback is its own: the agent listens there unless the operator sets
		// OUTBOX_INGEST_LISTEN=0.0.0.0:8089, which the agent accepts only with ingest auth
		// (OUTBOX_INGEST_WRITE_KEYS or OUTBOX_INGEST_TOKEN) or allow_unauthenticated.
		Env:          []string{"OUTBOX_DATA_DIR=" + imageDataDir, "SSL_CERT_FILE=" + imageCABundle},
		Volumes:      map[string]struct{}{imageDataDir: {}},
		ExposedPorts: map[string]struct{}{imagePort: {}},
		WorkingDir:   imageDataDir,
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":    "outbox",
			"org.opencontainers.image.version":  in.Version,
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.source":   "https://github.com/outboxhq/outbox",
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	tag, err := name.NewTag(in.Repo + ":" + imageTag(in.Version))
	if err != nil {
		return "", fmt.Errorf("image name %s:%s: %w", in.Repo, in.Version, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return "", err
	}
	return tag.String(), nil
}

// imageTag is the version as a valid tag: letters, digits, '.', '_' and '-' only.
func imageTag(v string) string {
	out := []rune{}
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '.', r == '_', r == '-':
			out = append(out, r)
		default:
			out = append(out, '_')
		}
	}
	return string(out)
}

// imageLayer is the one layer: the binary, the CA roots, a passwd entry for the user, and the
// data directory owned by it (a fresh volume mounted there takes that ownership).
func imageLayer(in imageInput) (v1.Layer, error) {
	bin, err := os.ReadFile(in.Bin)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(in.CABundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w; install Debian's ca-certificates or pass -ca-bundle", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(p string, uid int, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch})
	}
	file := func(p string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(body)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", imageUID, imageUID, imageDataDir)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", imageUID)
	steps := []func() error{
		func() error { return dir("etc", 0, 0o755) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl", 0, 0o755) },
		func() error { return dir("etc/ssl/certs", 0, 0o755) },
		func() error { return file(imageCABundle[1:], 0o644, ca) },
		func() error { return dir("tmp", 0, 0o1777) },
		func() error { return dir("usr", 0, 0o755) },
		func() error { return dir("usr/bin", 0, 0o755) },
		func() error { return file(imageBinary[1:], 0o755, bin) },
		func() error { return dir("var", 0, 0o755) },
		func() error { return dir("var/lib", 0, 0o755) },
		func() error { return dir(imageDataDir[1:], imageUID, 0o750) },
		tw.Close,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
