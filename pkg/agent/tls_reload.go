package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// certReloader holds the TLS material the listener serves and swaps it atomically when the
// files change. Handshakes read the current material through GetCertificate (and, with mTLS,
// GetConfigForClient for the client CAs), so a rotation never closes a connection or fails a
// handshake: connections made before it keep their session, new ones get the new certificate.
// A new reading that does not load (a missing file, a key that does not match, an expired
// certificate) is refused and the current one stays.
type certReloader struct {
	files TLSConfig
	log   *slog.Logger
	now   func() time.Time
	cur   atomic.Pointer[tlsMaterial]
	mu    sync.Mutex // one reload at a time
}

// newCertReloader loads the files once; the error is the configuration error loadTLS gives.
func newCertReloader(files TLSConfig, log *slog.Logger, now func() time.Time) (*certReloader, error) {
	m, err := loadTLS(files)
	if err != nil {
		return nil, err
	}
	r := &certReloader{files: files, log: log, now: now}
	r.cur.Store(m)
	return r, nil
}

// reload re-reads the files. It returns nil when the new material is in use or the files did
// not change, and the reason otherwise, in which case the old material stays and a warn line
// says so.
func (r *certReloader) reload(why string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, err := loadTLS(r.files)
	if err == nil && m.cert.Leaf != nil && r.now().After(m.cert.Leaf.NotAfter) {
		err = fmt.Errorf("ingest.tls.cert_file %q: the certificate expired at %s", r.files.CertFile, m.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if err != nil {
		r.log.Warn("TLS certificate reload refused; still serving the previous certificate", "reason", why, "err", err)
		return err
	}
	if m.same(r.cur.Load()) {
		return nil
	}
	r.cur.Store(m)
	attrs := []any{"reason", why, "cert_file", r.files.CertFile}
	if m.cert.Leaf != nil {
		attrs = append(attrs, "subject", m.cert.Leaf.Subject.String(), "not_after", m.cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.log.Info("TLS certificate reloaded", attrs...)
	return nil
}

// serverConfig is the listener's tls.Config: TLS 1.2 at least, the current certificate on
// every handshake, and with mTLS a verified client certificate required against the current
// client CAs.
func (r *certReloader) serverConfig() *tls.Config {
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.cur.Load().cert, nil
		},
	}
	if !r.files.mutual() {
		return base
	}
	base.ClientAuth = tls.RequireAndVerifyClientCert
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = r.cur.Load().clients
		return c, nil
	}
	return base
}

// watch re-reads the files when anything changes in their directories, until ctx ends. It
// watches the directories, not the files: an atomic replacement (a rename over the file, or
// the symlink swap of a Kubernetes secret volume) leaves a watch on the old file silent. When
// the watch cannot be set up, certificates are still re-read on SIGHUP (Agent.ReloadTLS).
func (r *certReloader) watch(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.log.Warn("cannot watch the TLS files; certificates are re-read on SIGHUP only", "err", err)
		return
	}
	defer w.Close()
	dirs := map[string]bool{}
	for _, f := range []string{r.files.CertFile, r.files.KeyFile, r.files.ClientCAFile} {
		if f == "" {
			continue
		}
		d := filepath.Dir(f)
		if dirs[d] {
			continue
		}
		dirs[d] = true
		if err := w.Add(d); err != nil {
			r.log.Warn("cannot watch a TLS file's directory; certificates are re-read on SIGHUP only", "dir", d, "err", err)
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			// A change written in several steps (certificate, then key) may be refused at the
			// first step and taken at the next; reload logs each refusal.
			_ = r.reload("file changed: " + ev.Name)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				r.log.Warn("watching the TLS files", "err", err)
				continue
			}
			_ = r.reload("file events overflowed")
		}
	}
}

// startTLS loads the TLS files when ingest.tls is set and starts watching them (until
// Shutdown).
func (a *Agent) startTLS() error {
	if !a.cfg.TLS.Enabled() {
		return nil
	}
	now := time.Now
	if a.cfg.Clock != nil {
		now = a.cfg.Clock.Now
	}
	r, err := newCertReloader(a.cfg.TLS, a.log, now)
	if err != nil {
		return err
	}
	a.tls = r
	a.bg.Go(func() { r.watch(a.baseCtx) })
	return nil
}

// ReloadTLS re-reads the TLS files now (outbox run calls it on SIGHUP). Without ingest.tls it
// does nothing and returns nil. When the new files do not load, the error says why and the
// agent keeps serving the certificate it had.
func (a *Agent) ReloadTLS() error {
	if a.tls == nil {
		return nil
	}
	return a.tls.reload("reload requested")
}
