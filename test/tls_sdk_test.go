package test_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// analyticsNodeVersion is the @segment/analytics-node release the SDK test drives, pinned so
// that a new release cannot change what the test checks. 2.2.1 is the newest that runs on
// Node 18, the version Debian stable's nodejs package has.
const analyticsNodeVersion = "2.2.1"

// analyticsNodeModules returns a node_modules directory holding the SDK, installed once per
// version into the user's cache (never into the repository) and reused by later runs. Without
// node or npm, or when the install fails, the test ends through testutil.MissingTool.
func analyticsNodeModules(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.MissingTool(t, tool+" not on PATH (apt-get install nodejs npm): the analytics-node SDK is not run against the agent")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".", 2)[0])
	if err != nil || major < 18 {
		testutil.MissingTool(t, fmt.Sprintf("node %q (%v) is older than 18, which @segment/analytics-node %s needs", out, err, analyticsNodeVersion))
	}

	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	parent := filepath.Join(cache, "outbox-test")
	dir := filepath.Join(parent, "analytics-node-"+analyticsNodeVersion)
	modules := filepath.Join(dir, "node_modules")
	installed := func() bool {
		b, err := os.ReadFile(filepath.Join(modules, "@segment", "analytics-node", "package.json"))
		var pkg struct{ Version string }
		return err == nil && json.Unmarshal(b, &pkg) == nil && pkg.Version == analyticsNodeVersion
	}
	if installed() {
		return modules
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// Installed beside the cache entry and renamed into place, so that a run killed midway or
	// a concurrent run never leaves a half-installed entry that looks complete.
	tmp, err := os.MkdirTemp(parent, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", tmp,
		"@segment/analytics-node@"+analyticsNodeVersion)
	npm.WaitDelay = 5 * time.Second
	if out, err := npm.CombinedOutput(); err != nil {
		testutil.MissingTool(t, fmt.Sprintf("npm install @segment/analytics-node@%s failed (%v):\n%s", analyticsNodeVersion, err, out))
	}
	if err := os.Rename(tmp, dir); err != nil && !installed() {
		t.Fatalf("moving the SDK into the cache: %v", err)
	}
	if !installed() {
		t.Fatalf("npm installed no @segment/analytics-node %s under %s", analyticsNodeVersion, modules)
	}
	return modules
}

// sdkScript sends SDK_EVENTS track calls through an unmodified analytics-node client to
// SDK_HOST and prints, as one JSON line, each event's messageId and delivery error, the
// errors the client emitted, and the URL of each request it made. maxRetries 0: a failure
// shows instead of being retried away.
const sdkScript = `'use strict'
const { Analytics } = require('@segment/analytics-node')
const analytics = new Analytics({
  writeKey: process.env.SDK_WRITE_KEY,
  host: process.env.SDK_HOST,
  path: '/v1/batch',
  flushAt: 10,
  flushInterval: 100,
  maxRetries: 0,
  httpRequestTimeout: 10000,
})
const describe = (e) => [e && e.message, e && e.cause && e.cause.code, e && e.cause && e.cause.message]
  .filter(Boolean).join(': ') || String(e)
const out = { events: [], emitted: [], requests: [] }
analytics.on('error', (e) => out.emitted.push(describe(e && e.reason)))
analytics.on('http_request', (r) => out.requests.push(r.url))
const sent = []
for (let i = 0; i < Number(process.env.SDK_EVENTS); i++) {
  sent.push(new Promise((resolve) => {
    analytics.track({ userId: 'sdk-user-' + i, event: 'SDK over TLS', properties: { i } }, (err, ctx) => {
      out.events.push({ id: ctx ? ctx.event.messageId : '', error: err ? describe(err) : '' })
      resolve()
    })
  }))
}
Promise.all(sent)
  .then(() => analytics.closeAndFlush({ timeout: 20000 }))
  .then(() => process.stdout.write(JSON.stringify(out) + '\n'))
`

// sdkRun is what sdkScript printed.
type sdkRun struct {
	Events []struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	} `json:"events"`
	Emitted  []string `json:"emitted"`
	Requests []string `json:"requests"`
}

// runSDK runs sdkScript with node against host, NODE_EXTRA_CA_CERTS set to caFile unless it is
// "", in an environment of only what the script needs.
func runSDK(t *testing.T, modules, host, writeKey, caFile string, events int) sdkRun {
	t.Helper()
	script := filepath.Join(t.TempDir(), "send.cjs")
	testutil.WriteFile(t, script, []byte(sdkScript))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "NODE_PATH=" + modules,
		"SDK_HOST=" + host, "SDK_WRITE_KEY=" + writeKey, "SDK_EVENTS=" + strconv.Itoa(events)}
	if caFile != "" {
		cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var run sdkRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("node printed no result (%v)\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if len(run.Events) != events {
		t.Fatalf("the SDK called back for %d events, want %d; stderr: %s", len(run.Events), events, stderr.String())
	}
	return run
}

func TestRun_TLS_AnalyticsNodeSDKDeliversOverHTTPSTrustingTheCAGivenInNODE_EXTRA_CA_CERTS(t *testing.T) {
	modules := analyticsNodeModules(t)
	ca, certFile, keyFile, caFile := serverTLSFiles(t)
	s := sinktest.Start(t, sink.Options{})
	const writeKey, events = "sdk-write-key", 25
	// analytics-node 2.x sends its write key only as the batch body's writeKey (3.x also as the
	// Basic auth username); the agent accepts it there.
	a := startTLSAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile,
		"OUTBOX_INGEST_WRITE_KEYS": writeKey}, ca.Pool(), nil)

	// Without the CA the SDK must refuse the agent's certificate: this shows the trust below
	// comes from NODE_EXTRA_CA_CERTS, not from a client that verifies nothing.
	untrusted := runSDK(t, modules, a.url, writeKey, "", events)
	for _, e := range untrusted.Events {
		if !strings.Contains(e.Error, "certificate") {
			t.Fatalf("without NODE_EXTRA_CA_CERTS, event %s: error %q, want the certificate refused", e.ID, e.Error)
		}
	}
	t.Logf("without NODE_EXTRA_CA_CERTS the SDK reports: %s", untrusted.Events[0].Error)

	// A key the agent does not accept is refused: the body's key is checked, not ignored.
	for _, e := range runSDK(t, modules, a.url, "not-"+writeKey, caFile, events).Events {
		if e.Error == "" {
			t.Fatalf("with a wrong write key, event %s was accepted", e.ID)
		}
	}

	run := runSDK(t, modules, a.url, writeKey, caFile, events)
	ids := make([]string, 0, events)
	for _, e := range run.Events {
		if e.Error != "" || e.ID == "" {
			t.Errorf("the SDK reported event %q: error %q", e.ID, e.Error)
		}
		ids = append(ids, e.ID)
	}
	if len(run.Emitted) != 0 {
		t.Errorf("the SDK emitted errors: %q", run.Emitted)
	}
	if len(run.Requests) < events/10 {
		t.Errorf("the SDK made %d requests, want at least %d (batches of at most 10)", len(run.Requests), events/10)
	}
	for _, u := range run.Requests {
		if u != a.url+"/v1/batch" {
			t.Errorf("the SDK posted to %s, want %s/v1/batch", u, a.url)
		}
	}
	if missing := waitDelivered(t, s, ids, 15*time.Second); missing != 0 {
		t.Fatalf("%d of the SDK's %d events did not reach the sink", missing, len(ids))
	}
	if got := s.Stats().Unique; got != int64(events) {
		t.Errorf("the sink has %d events, want the SDK's %d (none of the refused runs')", got, events)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// newConnSerial makes a new connection to url and returns the serial of the certificate the
// agent presents on it.
func newConnSerial(url string, roots *x509.CertPool) (string, error) {
	c := tlsSender(roots, false)
	resp, err := c.Get(url + "/healthz")
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.TLS.PeerCertificates[0].SerialNumber.String(), nil
}

// tlsSender trusts roots; keepAlive false makes every request a new connection, hence a new
// handshake.
func tlsSender(roots *x509.CertPool, keepAlive bool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: !keepAlive}}
}

// tlsLoad is senders POSTing small batches over HTTPS until stopped: two on a new connection
// per request, one on a kept-alive connection. It records the ids of every acknowledged batch
// and every failed request.
type tlsLoad struct {
	mu       sync.Mutex
	acked    []string
	failures []string
	requests atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func startTLSLoad(url string, roots *x509.CertPool) *tlsLoad {
	l := &tlsLoad{stop: make(chan struct{})}
	for g, keepAlive := range []bool{false, false, true} {
		c := tlsSender(roots, keepAlive)
		l.wg.Go(func() {
			defer c.CloseIdleConnections()
			for n := 0; n < 2000; n++ { // bounded even if stop never comes
				select {
				case <-l.stop:
					return
				default:
				}
				body, ids := trackBatch(fmt.Sprintf("rot-g%d-n%d", g, n), 3)
				resp, err := c.Post(url+"/v1/batch", "application/json", bytes.NewReader(body))
				l.mu.Lock()
				switch {
				case err != nil:
					l.failures = append(l.failures, err.Error())
				case resp.StatusCode != http.StatusOK:
					l.failures = append(l.failures, resp.Status)
				default:
					l.acked = append(l.acked, ids...)
				}
				l.mu.Unlock()
				if err == nil {
					resp.Body.Close()
				}
				l.requests.Add(1)
			}
		})
	}
	return l
}

// finish stops the senders and returns what they recorded.
func (l *tlsLoad) finish() (acked, failures []string) {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.failures
}

func TestRun_TLS_CertificateFilesRotatedUnderLoad_NoRequestFails_NewConnectionsGetTheNewCertificate(t *testing.T) {
	for _, tc := range []struct {
		name string
		// layout puts the first pair on disk and returns the paths the agent is given and
		// how a new pair replaces it.
		layout func(t *testing.T, first *testutil.KeyPair) (certFile, keyFile string, rotate func(*testutil.KeyPair))
	}{
		{"files renamed over the old ones", func(t *testing.T, first *testutil.KeyPair) (string, string, func(*testutil.KeyPair)) {
			certFile, keyFile := first.Write(t, t.TempDir())
			return certFile, keyFile, func(kp *testutil.KeyPair) { kp.Replace(t, certFile, keyFile) }
		}},
		{"Kubernetes secret: ..data symlink swapped", func(t *testing.T, first *testutil.KeyPair) (string, string, func(*testutil.KeyPair)) {
			sd := testutil.NewSecretDir(t, first)
			return sd.CertFile(), sd.KeyFile(), sd.Swap
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := testutil.NewCA(t, "test CA")
			first := ca.Server(t)
			certFile, keyFile, rotate := tc.layout(t, first)
			s := sinktest.Start(t, sink.Options{})
			a := startTLSAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{
				"OUTBOX_INGEST_TLS_CERT_FILE": certFile, "OUTBOX_INGEST_TLS_KEY_FILE": keyFile}, ca.Pool(), nil)
			if got, err := newConnSerial(a.url, ca.Pool()); err != nil || got != first.Serial.String() {
				t.Fatalf("before the rotation the agent serves serial %s (%v), want %s", got, err, first.Serial)
			}

			load := startTLSLoad(a.url, ca.Pool())
			t.Cleanup(func() { load.finish() }) // a failed wait below still stops the senders
			// Twice: the second rotation shows the watch survived the first replacing the files.
			for round := 1; round <= 2; round++ {
				next := ca.Server(t)
				rotate(next)
				waitServed(t, a, ca.Pool(), next.Serial.String(), 15*time.Second)
				// Keep the load on across the new certificate's first handshakes too.
				waitRequests(t, a, load, load.requests.Load()+30, 15*time.Second)
			}
			acked, failures := load.finish()
			if len(failures) != 0 {
				t.Fatalf("%d of %d requests failed during the rotations; first: %s", len(failures), load.requests.Load(), failures[0])
			}
			t.Logf("%d requests (%d events acknowledged) across the two rotations", load.requests.Load(), len(acked))
			if missing := waitDelivered(t, s, acked, 20*time.Second); missing != 0 {
				t.Fatalf("%d of %d acknowledged events did not reach the sink", missing, len(acked))
			}
			a.signal(t, syscall.SIGTERM)
			if code, _ := a.wait(t, 10*time.Second); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0", code)
			}
		})
	}
}

// waitServed polls new connections until the agent presents the certificate with serial, at
// most d. A failed handshake fails the test: no connection may fail during a rotation.
func waitServed(t *testing.T, a *agent, roots *x509.CertPool, serial string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, err := newConnSerial(a.url, roots)
		if err != nil {
			t.Fatalf("a new connection failed during the rotation: %v", err)
		}
		if got == serial {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new connections still get serial %s %s after the rotation, want %s; stderr:\n%s", got, d, serial, a.stderr.String())
		}
		select {
		case <-a.done:
			t.Fatalf("the agent exited during the rotation (%v)", a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitRequests waits until the load has sent n requests, at most d.
func waitRequests(t *testing.T, a *agent, load *tlsLoad, n int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for load.requests.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the senders made %d requests in %s, want %d", load.requests.Load(), d, n)
		}
		select {
		case <-a.done:
			t.Fatalf("the agent exited during the rotation (%v)", a.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
