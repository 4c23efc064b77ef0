package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// buildTestImage writes the image tarball of the test binary and returns its path and tag.
func buildTestImage(t *testing.T) (string, string) {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "outbox-image.tar")
	tag, err := buildImage(imageInput{Bin: testBin, CABundle: ca, Arch: runtime.GOARCH, Version: testVersion, Repo: "example.test/outbox"}, path)
	if err != nil {
		t.Fatal(err)
	}
	return path, tag
}

func TestImage_ConfigRunsOutboxAsNonRootWithTheDataVolumeAndIngestPort(t *testing.T) {
	path, tag := buildTestImage(t)
	if tag != "example.test/outbox:"+testVersion {
		t.Errorf("tag %q, want example.test/outbox:%s", tag, testVersion)
	}
	ref, _ := name.NewTag(tag)
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatalf("the tarball does not read back as the tagged image: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if got := strings.Join(c.Entrypoint, " "); got != "/usr/bin/outbox run" {
		t.Errorf("entrypoint %q, want /usr/bin/outbox run", got)
	}
	if _, ok := c.Volumes["/var/lib/outbox"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want /var/lib/outbox", c.Volumes)
	}
	if _, ok := c.ExposedPorts["8089/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 8089/tcp", c.ExposedPorts)
	}
	if !contains(c.Env, "OUTBOX_DATA_DIR=/var/lib/outbox") {
		t.Errorf("env %v does not point data_dir at the volume", c.Env)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e, "OUTBOX_INGEST_LISTEN=") {
			t.Errorf("the image sets %s: a non-loopback listener must come with the operator's auth", e)
		}
	}
	// docker load and podman load read manifest.json with the tag in RepoTags.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != tag {
		t.Errorf("manifest.json %+v (%v), want one image tagged %s", m, err, tag)
	}
}

func TestImage_LayerHoldsTheBinaryAndItsEntrypointServesReadyz(t *testing.T) {
	path, _ := buildTestImage(t)
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	root := t.TempDir()
	headers := unpack(t, tar.NewReader(rc), root)
	for p, want := range map[string]struct {
		mode int64
		uid  int
	}{"usr/bin/outbox": {0o755, 0}, "var/lib/outbox/": {0o750, 65532}, "etc/ssl/certs/ca-certificates.crt": {0o644, 0}, "etc/passwd": {0o644, 0}} {
		h, ok := headers[p]
		if !ok {
			t.Errorf("%s is not in the layer", p)
			continue
		}
		if h.Mode != want.mode || h.Uid != want.uid {
			t.Errorf("%s: mode %o uid %d, want %o uid %d", p, h.Mode, h.Uid, want.mode, want.uid)
		}
	}
	packed, _ := os.ReadFile(filepath.Join(root, "usr/bin/outbox"))
	built, _ := os.ReadFile(testBin)
	if string(packed) != string(built) {
		t.Fatal("the layer's /usr/bin/outbox is not the binary the image was built from")
	}
	// An empty base has no dynamic loader or libc: the binary must be static.
	if ef, err := elf.Open(filepath.Join(root, "usr/bin/outbox")); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the image's binary needs a dynamic loader; build it with CGO_ENABLED=0")
			}
		}
		ef.Close()
	}

	// Run the entrypoint from the unpacked layer with the image's environment, its paths moved
	// under the unpacked root, on a loopback port, and wait for /readyz.
	cf, _ := img.ConfigFile()
	listen := freeLoopback(t)
	env := []string{"PATH=/usr/bin", "OUTBOX_INGEST_LISTEN=" + listen, "OUTBOX_UPLOAD_ENDPOINT=http://127.0.0.1:9/v1/batch"}
	for _, e := range cf.Config.Env {
		k, v, _ := strings.Cut(e, "=")
		if strings.HasPrefix(v, "/") {
			v = filepath.Join(root, v)
		}
		env = append(env, k+"="+v)
	}
	ep := cf.Config.Entrypoint
	cmd := exec.Command(filepath.Join(root, ep[0]), ep[1:]...)
	cmd.Env, cmd.Dir = env, filepath.Join(root, cf.Config.WorkingDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	if err := waitReady(time.Now().Add(15*time.Second), "http://"+listen+"/readyz", done); err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/outbox/outbox.db")); err != nil {
		t.Errorf("the agent did not put its queue in the image's data directory: %v", err)
	}
}

// unpack extracts a layer's regular files and directories under root and returns the headers.
func unpack(t *testing.T, tr *tar.Reader, root string) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
		dst := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, os.FileMode(h.Mode)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected entry %s of type %c in the layer", h.Name, h.Typeflag)
		}
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady polls url until it answers 200, the process exits, or deadline passes.
func waitReady(deadline time.Time, url string, exited <-chan error) error {
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the entrypoint exited before /readyz answered: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 in time", url)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
