package httpdest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// recorder is a collector that answers 200 and keeps every request's headers.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *recorder) last() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[len(r.headers)-1]
}

func TestDestination_SetCredentials_TheNextAttemptSendsTheNewKeyAndHeaders(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	d, err := httpdest.New(httpdest.Config{
		Endpoint: srv.URL + "/v1/batch",
		WriteKey: "old",
		Headers:  map[string]string{"X-Tenant": "a"},
		Gzip:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	batch := delivery.Batch{Events: [][]byte{[]byte(`{"type":"track"}`)}}
	send := func() http.Header {
		t.Helper()
		if o := d.Send(context.Background(), batch); o.Class != delivery.ClassSuccess {
			t.Fatalf("Send = %v (%v), want success", o.Class, o.Err)
		}
		return rec.last()
	}
	basic := func(key string) string {
		r, _ := http.NewRequest(http.MethodPost, "http://x", nil)
		r.SetBasicAuth(key, "")
		return r.Header.Get("Authorization")
	}

	h := send()
	if h.Get("Authorization") != basic("old") || h.Get("X-Tenant") != "a" {
		t.Fatalf("first attempt: Authorization %q, X-Tenant %q", h.Get("Authorization"), h.Get("X-Tenant"))
	}
	d.SetCredentials("new", map[string]string{"X-Tenant": "b"})
	h = send()
	if h.Get("Authorization") != basic("new") || h.Get("X-Tenant") != "b" {
		t.Errorf("after SetCredentials: Authorization %q, X-Tenant %q", h.Get("Authorization"), h.Get("X-Tenant"))
	}
	if h.Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding = %q: gzip is not a credential and must stay", h.Get("Content-Encoding"))
	}
	d.SetCredentials("", nil)
	if h = send(); h.Get("Authorization") != "" || h.Get("X-Tenant") != "" {
		t.Errorf("without a key: Authorization %q, X-Tenant %q, want neither", h.Get("Authorization"), h.Get("X-Tenant"))
	}
}
