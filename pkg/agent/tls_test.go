package agent_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
)

// httpsURL is the harness's base URL over TLS.
func httpsURL(h *harness) string { return strings.Replace(h.url, "http://", "https://", 1) }

// tlsClient trusts roots and presents cert (nil: none); keepAlive false makes every request
// a new connection, hence a new handshake.
func tlsClient(roots *x509.CertPool, cert *tls.Certificate, keepAlive bool) *http.Client {
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: !keepAlive}}
}

// servedSerial makes a new connection and returns the serial of the certificate the agent
// presents.
func servedSerial(t *testing.T, url string, roots *x509.CertPool) string {
	t.Helper()
	resp, err := tlsClient(roots, nil, false).Get(url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

func TestTLS_ServesHTTPSWithTheConfiguredCertificate(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	srv := ca.Server(t)
	certFile, keyFile := srv.Write(t, t.TempDir())
	h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile}}})

	resp, err := tlsClient(ca.Pool(), nil, true).Post(httpsURL(h)+"/v1/track", "application/json",
		strings.NewReader(`{"userId":"u1","event":"over tls"}`))
	if err != nil {
		t.Fatalf("POST over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/track over TLS: %d, want 200", resp.StatusCode)
	}
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(srv.Serial) != 0 {
		t.Errorf("served certificate serial %s, want %s", got, srv.Serial)
	}
	if h.stored() != 1 {
		t.Errorf("events stored %d, want 1", h.stored())
	}
	// Plain HTTP to the TLS listener is answered with a 400, never served.
	plain, err := http.Get(h.url + "/healthz")
	if err == nil {
		plain.Body.Close()
		if plain.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS listener: %d, want 400", plain.StatusCode)
		}
	}
}

func TestTLS_RefusesTLS11Handshake(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	certFile, keyFile := ca.Server(t).Write(t, t.TempDir())
	h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile}}})
	addr := strings.TrimPrefix(h.url, "http://")
	for _, tc := range []struct {
		name    string
		max     uint16
		wantErr bool
	}{
		{"TLS 1.1 refused", tls.VersionTLS11, true},
		{"TLS 1.2 accepted", tls.VersionTLS12, false},
		{"TLS 1.3 accepted", tls.VersionTLS13, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tc.max})
			if err == nil {
				conn.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("handshake with max version %x: err %v, want error %v", tc.max, err, tc.wantErr)
			}
		})
	}
}

func TestMTLS_RefusesClientWithoutCertificateAndAcceptsOneWithIt(t *testing.T) {
	ca := testutil.NewCA(t, "server CA")
	clientCA := testutil.NewCA(t, "client CA")
	other := testutil.NewCA(t, "another CA")
	dir := t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, dir)
	caFile := filepath.Join(dir, "clients.pem")
	testutil.WriteFile(t, caFile, clientCA.PEM)
	h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}}})

	good := clientCA.Client(t).TLS
	foreign := other.Client(t).TLS
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		ok   bool
	}{
		{"no client certificate is refused", nil, false},
		{"a certificate from another CA is refused", &foreign, false},
		{"a certificate from the client CA is accepted", &good, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tlsClient(ca.Pool(), tc.cert, false).Get(httpsURL(h) + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			if tc.ok && (err != nil || resp.StatusCode != http.StatusOK) {
				t.Fatalf("GET /healthz with a valid client certificate: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("GET /healthz: answered %d, want the handshake refused", resp.StatusCode)
			}
		})
	}
}

func TestTLS_SymlinkSwapRotationIsPickedUpWithoutFailingRequests(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	first, second := ca.Server(t), ca.Server(t)
	sd := testutil.NewSecretDir(t, first)
	h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: sd.CertFile(), KeyFile: sd.KeyFile()}}})
	url := httpsURL(h)
	if got := servedSerial(t, url, ca.Pool()); got != first.Serial.String() {
		t.Fatalf("served serial %s before the rotation, want %s", got, first.Serial)
	}

	// Senders on new connections (a handshake each) and on one kept-alive connection run
	// through the rotation; none may fail.
	stop := make(chan struct{})
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for _, keepAlive := range []bool{false, false, true} {
		c := tlsClient(ca.Pool(), nil, keepAlive)
		wg.Go(func() {
			for i := 0; i < 2000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Post(url+"/v1/track", "application/json", strings.NewReader(`{"userId":"u","event":"rotating"}`))
				sent.Add(1)
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%v %v", err, resp))
				}
				if err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	sd.Swap(second)
	deadline := time.Now().Add(10 * time.Second)
	for servedSerial(t, url, ca.Pool()) != second.Serial.String() {
		if time.Now().After(deadline) {
			t.Fatal("the agent still serves the old certificate 10s after the symlink swap")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the rotation; first: %v", failed.Load(), sent.Load(), firstErr.Load())
	}
	if sent.Load() == 0 {
		t.Fatal("no request was sent during the rotation")
	}
}

func TestTLS_BadNewCertificateIsRefusedAndTheOldOneKept(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	old := ca.Server(t)
	dir := t.TempDir()
	certFile, keyFile := old.Write(t, dir)
	h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile}}})
	url := httpsURL(h)
	other := ca.Server(t)
	expired := ca.ExpiredServer(t)
	for _, tc := range []struct {
		name      string
		cert, key []byte
	}{
		{"not PEM", []byte("not a certificate"), old.KeyPEM},
		{"key of another certificate", old.CertPEM, other.KeyPEM},
		{"empty files", nil, nil},
		{"expired certificate", expired.CertPEM, expired.KeyPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.WriteFile(t, certFile, tc.cert)
			testutil.WriteFile(t, keyFile, tc.key)
			if err := h.agent.ReloadTLS(); err == nil {
				t.Fatal("ReloadTLS accepted a bad certificate")
			}
			if got := servedSerial(t, url, ca.Pool()); got != old.Serial.String() {
				t.Fatalf("after a refused reload the agent serves %s, want the old %s", got, old.Serial)
			}
		})
	}
	// A good pair written afterwards is taken.
	other.Write(t, dir)
	if err := h.agent.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS of a good pair: %v", err)
	}
	if got := servedSerial(t, url, ca.Pool()); got != other.Serial.String() {
		t.Fatalf("after a good reload the agent serves %s, want %s", got, other.Serial)
	}
}

func TestConfig_TLSFiles_AreCheckedNamingTheKey(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	dir := t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, dir)
	otherDir := t.TempDir()
	_, otherKey := ca.Server(t).Write(t, otherDir)
	caFile := filepath.Join(dir, "ca.pem")
	testutil.WriteFile(t, caFile, ca.PEM)
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name    string
		cfg     agent.Config
		wantKey string // "" = valid
		wantIn  string
	}{
		{name: "cert and key serve HTTPS", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile}}},
		{name: "cert without key", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile}}, wantKey: "ingest.tls.key_file", wantIn: "needs both"},
		{name: "key without cert", cfg: agent.Config{TLS: agent.TLSConfig{KeyFile: keyFile}}, wantKey: "ingest.tls.cert_file", wantIn: "needs both"},
		{name: "client CA without cert", cfg: agent.Config{TLS: agent.TLSConfig{ClientCAFile: caFile}}, wantKey: "ingest.tls.client_ca_file", wantIn: "ingest.tls.cert_file"},
		{name: "missing cert file", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: missing, KeyFile: keyFile}}, wantKey: "ingest.tls.cert_file", wantIn: "cannot be read"},
		{name: "missing key file", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: missing}}, wantKey: "ingest.tls.key_file", wantIn: "cannot be read"},
		{name: "key of another certificate", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: otherKey}}, wantKey: "ingest.tls.cert_file", wantIn: "not a usable pair"},
		{name: "client CA file without PEM", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: keyFile}}, wantKey: "ingest.tls.client_ca_file", wantIn: "no PEM certificate"},
		{name: "missing client CA file", cfg: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: missing}}, wantKey: "ingest.tls.client_ca_file", wantIn: "cannot be read"},
		{name: "mTLS counts as auth on a non-loopback listener", cfg: agent.Config{Listen: "0.0.0.0:8089", TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}}},
		{name: "TLS without client certificates is not auth", cfg: agent.Config{Listen: "0.0.0.0:8089", TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile}}, wantKey: "ingest.listen", wantIn: "ingest.tls.client_ca_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			var ke *errs.KeyError
			if !errors.As(err, &ke) || ke.Key != tc.wantKey {
				t.Fatalf("Validate: %v, want a KeyError for %s", err, tc.wantKey)
			}
			if !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("error %q does not say %q", err, tc.wantIn)
			}
		})
	}
}
