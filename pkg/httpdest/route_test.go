package httpdest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

func TestDestination_Routes_TheBatchSourceChoosesKeyEndpointAndHeaders(t *testing.T) {
	var paths []string
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		rec.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	routes := map[string]delivery.Route{
		"eu":     {Endpoint: srv.URL + "/eu/v1/batch", WriteKey: "wk-eu", Headers: map[string]string{"X-Region": "eu"}},
		"nokey":  {},
		"relay1": {WriteKey: "wk-relay"},
	}
	d, err := httpdest.New(httpdest.Config{
		Endpoint: srv.URL + "/v1/batch",
		Headers:  map[string]string{"Authorization": "Bearer shared-secret", "X-Team": "data"},
		Routes:   func(s string) (delivery.Route, bool) { r, ok := routes[s]; return r, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	basic := func(key string) string {
		r, _ := http.NewRequest(http.MethodPost, "http://x", nil)
		r.SetBasicAuth(key, "")
		return r.Header.Get("Authorization")
	}
	tests := []struct {
		name, source, path, auth, region, team string
	}{
		{name: "no source is the default source: upload.headers as they are", source: "", path: "/v1/batch", auth: "Bearer shared-secret", team: "data"},
		{name: "the default source without a route of its own", source: "default", path: "/v1/batch", auth: "Bearer shared-secret", team: "data"},
		{name: "a source's endpoint, key and headers", source: "eu", path: "/eu/v1/batch", auth: basic("wk-eu"), region: "eu", team: "data"},
		{name: "a source without a key sends no credential, not the default's", source: "nokey", path: "/v1/batch", auth: "", team: "data"},
		{name: "a relay source's key", source: "relay1", path: "/v1/batch", auth: basic("wk-relay"), team: "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := d.Send(context.Background(), delivery.Batch{Source: tt.source, Events: [][]byte{[]byte(`{"type":"track"}`)}})
			if o.Class != delivery.ClassSuccess {
				t.Fatalf("Send = %v (%v)", o.Class, o.Err)
			}
			h := rec.last()
			if got := paths[len(paths)-1]; got != tt.path {
				t.Errorf("path %s, want %s", got, tt.path)
			}
			if got := h.Get("Authorization"); got != tt.auth {
				t.Errorf("Authorization %q, want %q", got, tt.auth)
			}
			if h.Get("X-Region") != tt.region || h.Get("X-Team") != tt.team {
				t.Errorf("headers X-Region %q X-Team %q", h.Get("X-Region"), h.Get("X-Team"))
			}
		})
	}
	t.Run("a source without a route stays queued", func(t *testing.T) {
		n := len(paths)
		o := d.Send(context.Background(), delivery.Batch{Source: "gone", Events: [][]byte{[]byte(`{"type":"track"}`)}})
		var ce *delivery.ConfigError
		if o.Class != delivery.ClassAborted || !errors.As(o.Err, &ce) || ce.Key != "sources.gone" || len(paths) != n {
			t.Fatalf("Send = %v (%v), %d requests; want aborted naming sources.gone, nothing sent", o.Class, o.Err, len(paths)-n)
		}
	})
}
