package test_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// startTLSAgent runs `outbox run` with ingest.tls.* from extra and waits until /healthz
// answers over HTTPS, trusting roots and presenting client (nil: none).
func startTLSAgent(t *testing.T, dataDir, endpoint string, extra map[string]string, roots *x509.CertPool, client *tls.Certificate) *agent {
	t.Helper()
	listen := testutil.FreeAddr(t)
	p := start(t, t.TempDir(), agentEnv(dataDir, listen, endpoint, extra), "run")
	a := &agent{proc: p, url: "https://" + listen}
	waitTLS(t, p, a.url, roots, client)
	return a
}

// serverTLSFiles makes a CA and a server certificate it signed, written to a temp dir: the
// files for ingest.tls.cert_file and key_file, and the CA's PEM file a client trusts.
func serverTLSFiles(t *testing.T) (ca *testutil.CA, certFile, keyFile, caFile string) {
	t.Helper()
	ca = testutil.NewCA(t, "test CA")
	certDir := t.TempDir()
	certFile, keyFile = ca.Server(t).Write(t, certDir)
	caFile = filepath.Join(certDir, "ca.pem")
	testutil.WriteFile(t, caFile, ca.PEM)
	return ca, certFile, keyFile, caFile
}

func TestRun_TLS_ServesHTTPSAndClientCommandsReachItWithCAFile(t *testing.T) {
	ca, certFile, keyFile, caFile := serverTLSFiles(t)
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	tlsEnv := map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile, "OUTBOX_BATCH_INTERVAL": "1h"}
	a := startTLSAgent(t, dir, s.URL()+"/v1/batch", tlsEnv, ca.Pool(), nil)
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	cwd := t.TempDir()

	code, out, stderr := runCLI(t, cwd, cli, "", "send", "--agent", a.url, "--ca-file", caFile, `{"event":"TLS","userId":"u-tls"}`)
	if code != 0 || !strings.Contains(out, "sent 1 event(s)") {
		t.Fatalf("send --ca-file: exit %d, out %q, err %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, cwd, cli, "", "status", "--agent", a.url, "--ca-file", caFile)
	if code != 0 || !strings.Contains(out, "1 events") {
		t.Fatalf("status --ca-file: exit %d, out:\n%s\nerr: %s", code, out, stderr)
	}
	// The same configuration as the agent's (ingest.tls.*): the default URL is https.
	cliTLS := map[string]string{"OUTBOX_DATA_DIR": dir, "OUTBOX_INGEST_LISTEN": strings.TrimPrefix(a.url, "https://"),
		"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile}
	code, out, stderr = runCLI(t, cwd, cliTLS, "", "flush", "--wait", "10s", "--ca-file", caFile)
	if code != 0 || !strings.Contains(out, "queue is empty") {
		t.Fatalf("flush with the agent's configuration and --ca-file: exit %d, out %q, err %q", code, out, stderr)
	}
	if got := s.Stats().Unique; got != 1 {
		t.Errorf("the sink has %d events, want 1", got)
	}
	// Without the CA the certificate is not trusted, and the message says what to pass.
	code, _, stderr = runCLI(t, cwd, cli, "", "status", "--agent", a.url)
	if code != 1 || !strings.Contains(stderr, "--ca-file") {
		t.Errorf("status without --ca-file: exit %d, stderr %q; want 1 naming --ca-file", code, stderr)
	}

	// SIGHUP re-reads the certificates and the agent runs on.
	a.signal(t, syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(a.stderr.String(), "TLS certificates re-read") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged 10s after SIGHUP; stderr:\n%s", a.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, _, stderr = runCLI(t, cwd, cli, "", "status", "--agent", a.url, "--ca-file", caFile)
	if code != 0 {
		t.Fatalf("status after SIGHUP: exit %d: %s", code, stderr)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

func TestRun_MTLS_ClientCommandsNeedCertAndKey(t *testing.T) {
	ca, certFile, keyFile, caFile := serverTLSFiles(t)
	client := ca.Client(t)
	clientDir := t.TempDir()
	clientCert, clientKey := client.Write(t, clientDir)
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	// mTLS is the auth that lets the agent listen on every interface.
	env := map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile, "OUTBOX_INGEST_TLS_CLIENT_CA_FILE": caFile}
	listen := testutil.FreeAddr(t)
	port := listen[strings.LastIndex(listen, ":"):]
	envAll := agentEnv(dir, "0.0.0.0"+port, s.URL()+"/v1/batch", env)
	p := start(t, t.TempDir(), envAll, "run")
	a := &agent{proc: p, url: "https://127.0.0.1" + port}
	waitTLS(t, p, a.url, ca.Pool(), &client.TLS)
	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	cwd := t.TempDir()

	code, _, stderr := runCLI(t, cwd, cli, "", "status", "--agent", a.url, "--ca-file", caFile)
	if code != 1 || !strings.Contains(stderr, "--cert and --key") {
		t.Errorf("status without a client certificate: exit %d, stderr %q; want 1 naming --cert and --key", code, stderr)
	}
	code, out, stderr := runCLI(t, cwd, cli, "", "send", "--agent", a.url, "--ca-file", caFile, "--cert", clientCert, "--key", clientKey, `{"event":"mTLS","userId":"u"}`)
	if code != 0 || !strings.Contains(out, "sent 1 event(s)") {
		t.Fatalf("send with --cert/--key: exit %d, out %q, err %q", code, out, stderr)
	}
	code, _, stderr = runCLI(t, cwd, cli, "", "status", "--agent", a.url, "--ca-file", caFile, "--cert", clientCert)
	if code != 2 || !strings.Contains(stderr, "--key") {
		t.Errorf("--cert without --key: exit %d, stderr %q; want 2 naming --key", code, stderr)
	}
}

// waitTLS is startTLSAgent's readiness wait for an agent started by hand.
func waitTLS(t *testing.T, p *proc, url string, roots *x509.CertPool, client *tls.Certificate) {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots}
	if client != nil {
		cfg.Certificates = []tls.Certificate{*client}
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	waitHealthyWith(t, p, url, hc)
}

func TestRun_TLSConfigErrors_Exit2NamingTheKey(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	certDir := t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, certDir)
	_, otherKey := ca.Server(t).Write(t, t.TempDir())
	missing := filepath.Join(certDir, "missing.pem")
	for _, tc := range []struct {
		name  string
		env   map[string]string
		wants []string
	}{
		{"cert without key", map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": certFile}, []string{"ingest.tls.key_file", "OUTBOX_INGEST_TLS_CERT_FILE"}},
		{"missing cert file", map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": missing, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile}, []string{"ingest.tls.cert_file", "missing.pem", "cannot be read"}},
		{"key of another certificate", map[string]string{"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": otherKey}, []string{"ingest.tls.cert_file", "ingest.tls.key_file", "not a usable pair"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"OUTBOX_DATA_DIR": filepath.Join(dir, "data")}
			for k, v := range tc.env {
				env[k] = v
			}
			code, _, stderr := runCLI(t, dir, env, "", "run")
			if code != 2 {
				t.Errorf("exit code %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("a refused configuration created the data directory")
			}
		})
	}
}

func TestRun_SIGHUPWithoutTLS_KeepsTheAgentRunning(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", nil)
	a.signal(t, syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(a.stderr.String(), `msg="configuration reloaded" applied="" message="no configuration change"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP line logged within 10s; stderr:\n%s", a.stderr.String())
		}
		select {
		case <-a.done:
			t.Fatalf("SIGHUP ended the agent (%v)", a.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if code, _ := post(t, a.url+"/v1/track", []byte(`{"event":"after HUP","userId":"u"}`), false); code != http.StatusOK {
		t.Fatalf("POST after SIGHUP: %d, want 200", code)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}
