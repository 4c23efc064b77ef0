package agent_test

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/agent"
)

// deadOne puts one rejected single-event batch in the dead letters of h (whose sink answers
// 400 once).
func deadOne(t *testing.T, h *harness, hdr map[string]string) {
	t.Helper()
	if r := h.do(req{path: "/v1/track", body: []byte(trackEvent), header: hdr}); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	if r := h.do(req{path: "/v1/flush?wait=10s", header: hdr}); r.code != http.StatusOK {
		t.Fatalf("flush: %d %s", r.code, r.body)
	}
	if st := h.client.Stats(); st.Dead.Batches != 1 {
		t.Fatalf("dead batches = %d, want 1", st.Dead.Batches)
	}
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestAdmin_TokenOpensAdminRoutesAndIngestCredentialsNever(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk-ingest"}, Token: "tok-ingest",
		Admin: agent.AdminConfig{Token: "adm-secret"}}})
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no credential is refused", "", http.StatusUnauthorized},
		{"an ingest write key is refused", basic("wk-ingest", ""), http.StatusUnauthorized},
		{"ingest.token is refused", "Bearer tok-ingest", http.StatusUnauthorized},
		{"a wrong admin token is refused", "Bearer adm-wrong", http.StatusUnauthorized},
		{"admin.token as Bearer is accepted", "Bearer adm-secret", http.StatusOK},
		{"admin.token as the Basic password (a browser's login) is accepted", basic("anyone", "adm-secret"), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.auth != "" {
				hdr["Authorization"] = tc.auth
			}
			for _, rq := range []req{
				{method: http.MethodGet, path: "/"},
				{method: http.MethodGet, path: "/v1/status"},
				{method: http.MethodGet, path: "/v1/samples"},
				{method: http.MethodGet, path: "/v1/dead"},
				{path: "/v1/flush"},
				{path: "/v1/dead/replay", body: []byte(`{}`)},
				{path: "/v1/forget", body: []byte(`{"user_ids":["u"]}`)},
			} {
				rq.header = hdr
				r := h.do(rq)
				if r.code != tc.want {
					t.Errorf("%s %s = %d %s, want %d", rq.method, rq.path, r.code, r.body, tc.want)
				}
				if r.code == http.StatusUnauthorized && !strings.Contains(r.header.Get("WWW-Authenticate"), "outbox admin") {
					t.Errorf("%s %s: 401 without a Basic challenge (WWW-Authenticate %q): a browser would not ask", rq.method, rq.path, r.header.Get("WWW-Authenticate"))
				}
				if bytes.Contains(r.body, []byte("adm-secret")) {
					t.Errorf("answer leaks the admin token: %s", r.body)
				}
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := h.get(path); r.code != http.StatusOK {
			t.Errorf("GET %s without a credential = %d, want 200 (open for probes)", path, r.code)
		}
	}
}

func TestAdmin_WithoutTokenAnswersOnlyLoopbackClientsAndNames(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk"}, Admin: agent.AdminConfig{AllowedHosts: []string{"outbox.internal"}}}})
	port := h.url[strings.LastIndex(h.url, ":")+1:]
	for _, tc := range []struct {
		name, host string
		want       int
	}{
		{"127.0.0.1 is a loopback name", "127.0.0.1:" + port, http.StatusOK},
		{"localhost is a loopback name", "localhost:" + port, http.StatusOK},
		{"[::1] is a loopback name", "[::1]:" + port, http.StatusOK},
		{"a name in admin.allowed_hosts is accepted", "outbox.internal:" + port, http.StatusOK},
		{"another name is refused (DNS rebinding)", "evil.example:" + port, http.StatusForbidden},
		{"a name that merely ends like localhost is refused", "evil-localhost:" + port, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(req{method: http.MethodGet, path: "/v1/dead", header: map[string]string{"Host": tc.host}})
			if r.code != tc.want {
				t.Fatalf("GET /v1/dead with Host %s = %d %s, want %d", tc.host, r.code, r.body, tc.want)
			}
			if r.code == http.StatusForbidden && !strings.Contains(string(r.body), "admin.allowed_hosts") {
				t.Errorf("refusal %s does not say what to do (admin.allowed_hosts)", r.body)
			}
		})
	}

	// A client on another host: the handler sees its address, not loopback.
	rec := httptest.NewRecorder()
	rq := httptest.NewRequest(http.MethodGet, "/v1/status", nil)
	rq.RemoteAddr, rq.Host = "192.0.2.7:40000", "127.0.0.1:"+port
	rq.SetBasicAuth("wk", "")
	h.agent.Handler().ServeHTTP(rec, rq)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "admin.token") {
		t.Errorf("GET /v1/status from 192.0.2.7 with a write key = %d %s, want 403 naming admin.token", rec.Code, rec.Body)
	}
}

func TestAdmin_CrossSiteRequestsCannotChangeState(t *testing.T) {
	h := start(t, setup{faults: "400x1"})
	deadOne(t, h, nil)
	origin := func(o string) map[string]string { return map[string]string{"Origin": o} }
	for _, tc := range []struct {
		name string
		path string
		hdr  map[string]string
		ct   string
		want int
	}{
		{"a cross-site purge (Origin of another site) is refused", "/v1/dead/purge", origin("http://evil.example"), "application/json", http.StatusForbidden},
		{"a cross-site purge (Sec-Fetch-Site) is refused", "/v1/dead/purge", map[string]string{"Sec-Fetch-Site": "cross-site"}, "application/json", http.StatusForbidden},
		{"a text/plain form post is refused", "/v1/dead/purge", nil, "text/plain", http.StatusUnsupportedMediaType},
		{"a urlencoded form post is refused", "/v1/dead/replay", nil, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"a cross-site flush is refused", "/v1/flush", origin("http://evil.example"), "application/json", http.StatusForbidden},
		{"a flush without Content-Type is refused", "/v1/flush", nil, "", http.StatusUnsupportedMediaType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, h.url+tc.path, strings.NewReader(`{"all":true}`))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("POST %s = %d, want %d", tc.path, res.StatusCode, tc.want)
			}
			if st := h.client.Stats(); st.Dead.Batches != 1 {
				t.Fatalf("a refused request changed the dead letters: %d batches, want 1", st.Dead.Batches)
			}
		})
	}
	// The agent's own page (same origin) may.
	u, _ := url.Parse(h.url)
	r := h.do(req{path: "/v1/dead/purge", body: []byte(`{"all":true}`),
		header: map[string]string{"Origin": "http://" + u.Host, "Sec-Fetch-Site": "same-origin"}})
	if r.code != http.StatusOK || h.client.Stats().Dead.Batches != 0 {
		t.Fatalf("same-origin purge = %d %s, dead batches %d; want 200 and none left", r.code, r.body, h.client.Stats().Dead.Batches)
	}
}

func TestAdmin_ClientCertificateOpensAdminUnderMTLS(t *testing.T) {
	ca := testutil.NewCA(t, "server CA")
	clientCA := testutil.NewCA(t, "client CA")
	dir := t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, dir)
	caFile := filepath.Join(dir, "clients.pem")
	testutil.WriteFile(t, caFile, clientCA.PEM)
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"without admin.token the client certificate is the admin credential", "", http.StatusOK},
		{"with admin.token the certificate alone is not enough", "adm", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: agent.Config{TLS: agent.TLSConfig{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile},
				Admin: agent.AdminConfig{Token: tc.token}}})
			good := clientCA.Client(t).TLS
			res, err := tlsClient(ca.Pool(), &good, false).Get(httpsURL(h) + "/v1/status")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Fatalf("GET /v1/status with a client certificate = %d, want %d", res.StatusCode, tc.want)
			}
		})
	}
}

// syncBuffer is a log destination safe for the agent's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAdmin_EveryActionIsAuditedAndPurgesAreCountedAsDrops(t *testing.T) {
	var logs syncBuffer
	h := start(t, setup{faults: "400x1", agent: agent.Config{Admin: agent.AdminConfig{Token: "adm-audit"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	auth := map[string]string{"Authorization": "Bearer adm-audit"}
	deadOne(t, h, auth)
	h.do(req{method: http.MethodGet, path: "/v1/dead", header: auth})
	if r := h.do(req{path: "/v1/dead/purge", body: []byte(`{"all":true}`), header: auth}); r.code != http.StatusOK {
		t.Fatalf("purge: %d %s", r.code, r.body)
	}
	if r := h.do(req{path: "/v1/forget", body: []byte(`{"user_ids":["person-to-forget"]}`), header: auth}); r.code != http.StatusOK {
		t.Fatalf("forget: %d %s", r.code, r.body)
	}
	out := logs.String()
	for _, want := range []string{
		`msg="admin action" action=flush credential=admin_token remote_addr=127.0.0.1:`,
		`msg="admin action" action=dead_list credential=admin_token remote_addr=127.0.0.1:`,
		`msg="admin action" action=dead_purge credential=admin_token remote_addr=127.0.0.1:`,
		`ids=all batches=1 events=1`,
		`msg="admin action" action=forget credential=admin_token remote_addr=127.0.0.1:`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "adm-audit") {
		t.Errorf("log holds the admin token:\n%s", out)
	}
	if strings.Contains(out, "person-to-forget") {
		t.Errorf("the audit log names the person forgotten:\n%s", out)
	}
	if got, ok := value(h.scrape(), "outbox_events_dropped_total", map[string]string{"reason": "purged"}); !ok || got != 1 {
		t.Errorf("outbox_events_dropped_total{reason=purged} = %v (present %v), want 1", got, ok)
	}
}

func TestAdmin_ReconfigureSwapsTheAdminToken(t *testing.T) {
	h := start(t, setup{agent: agent.Config{Admin: agent.AdminConfig{Token: "old"}}})
	if err := h.agent.Reconfigure(agent.Config{Admin: agent.AdminConfig{Token: "new"}}); err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]int{"old": http.StatusUnauthorized, "new": http.StatusOK} {
		if r := h.do(req{method: http.MethodGet, path: "/v1/status", header: map[string]string{"Authorization": "Bearer " + tok}}); r.code != want {
			t.Errorf("token %q after the swap: %d, want %d", tok, r.code, want)
		}
	}
}
