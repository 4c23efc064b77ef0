package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// fuzzRoutes are the routes FuzzIngest sends to, picked by the input's first byte.
var fuzzRoutes = []string{"/v1/batch", "/v1/import", "/v1/track", "/v1/identify", "/v1/alias", "/v1/group",
	"/v1/dead/purge", "/v1/dead/replay", "/v1/flush", "/v1/forget"}

// fuzzAuth are the credentials FuzzIngest presents, picked by the input's second byte: none,
// the write key, a wrong key, the ingest token, the admin token, or whatever the input holds.
var fuzzAuth = []func(extra string) string{
	func(string) string { return "" },
	func(string) string { return basic("wk-fuzz", "") },
	func(string) string { return basic("wk-wrong", "") },
	func(string) string { return "Bearer tok-fuzz" },
	func(string) string { return "Bearer adm-fuzz" },
	func(extra string) string { return extra },
}

// FuzzIngest sends arbitrary bodies, headers and credentials through the agent's handler with
// ingest auth (write key and token) and admin.token on, and checks the contract from outside:
// no panic; every answer is one of the documented codes with a JSON body that holds no
// secret; nothing is stored unless the answer is 200 from an ingest route with an accepted
// credential; and an admin route answers nothing but 401 without the admin token.
func FuzzIngest(f *testing.F) {
	h := start(f, setup{
		agent:  agent.Config{WriteKeys: []string{"wk-fuzz"}, Token: "tok-fuzz", Admin: agent.AdminConfig{Token: "adm-fuzz"}},
		upload: func(c *uploader.Config) { c.Queue.Sync = "none" }, // the store's durability is not what is fuzzed
	})
	track := []byte(`{"type":"track","userId":"u","event":"E","properties":{"n":1}}`)
	f.Add(uint8(0), uint8(1), []byte(`{"batch":[`+string(track)+`]}`), "", "application/json")
	f.Add(uint8(0), uint8(0), []byte(`{"writeKey":"wk-fuzz","batch":[`+string(track)+`]}`), "", "application/json")
	f.Add(uint8(0), uint8(0), []byte(`{"writeKey":"wk-wrong","batch":[]}`), "", "application/json")
	f.Add(uint8(2), uint8(3), track, "", "application/json")
	f.Add(uint8(2), uint8(5), track, "Basic d2stZnV6ejo=", "text/plain")
	f.Add(uint8(6), uint8(4), []byte(`{"all":true}`), "", "application/json")
	f.Add(uint8(6), uint8(1), []byte(`{"all":true}`), "", "application/json")
	f.Add(uint8(7), uint8(4), []byte(`{"ids":["x"]}`), "", "text/plain")
	f.Add(uint8(8), uint8(4), []byte(nil), "", "")
	f.Add(uint8(1), uint8(1), []byte("{\"batch\":[{\"type\":\"page\",\"userId\":\"\xff\"}]}"), "", "application/json")
	f.Fuzz(func(t *testing.T, route, auth uint8, body []byte, extraAuth, contentType string) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:40000"
		if a := fuzzAuth[int(auth)%len(fuzzAuth)](extraAuth); a != "" {
			r.Header.Set("Authorization", a)
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		before := h.stored()
		rec := httptest.NewRecorder()
		h.agent.Handler().ServeHTTP(rec, r)

		switch rec.Code {
		case 200, 202, 400, 401, 403, 404, 408, 409, 413, 415, 503:
		default:
			t.Fatalf("%s answered %d %s", path, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s answered %d with a body that is not JSON: %q", path, rec.Code, rec.Body)
		}
		for _, secret := range []string{"wk-fuzz", "tok-fuzz", "adm-fuzz"} {
			if strings.Contains(rec.Body.String(), secret) {
				t.Fatalf("%s answer holds a secret: %s", path, rec.Body)
			}
		}
		admin := strings.HasPrefix(path, "/v1/dead") || path == "/v1/flush" || path == "/v1/forget"
		hasAdminToken := r.Header.Get("Authorization") == "Bearer adm-fuzz"
		if admin && !hasAdminToken && rec.Code != http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("Authorization"), "Basic") {
			t.Fatalf("admin route %s without the admin token answered %d %s", path, rec.Code, rec.Body)
		}
		if stored := h.stored() - before; stored != 0 && (admin || rec.Code != http.StatusOK) {
			t.Fatalf("%s answered %d and stored %d events", path, rec.Code, stored)
		}
	})
}
