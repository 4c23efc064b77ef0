package httpdest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// followEverything is a CheckRedirect an application might set on its own client: it follows
// every redirect, 301/302/303 included, which would turn a batch into a body-less GET.
func followEverything(*http.Request, []*http.Request) error { return nil }

// hopServer answers POST /hop/N with status to /hop/N+1 until N reaches hops, then 200 at the
// last hop; it counts the requests that reach the last hop with their method.
type hopServer struct {
	status  int
	hops    int
	landed  atomic.Int64 // requests that reached the final URL
	gets    atomic.Int64 // requests that arrived as GET (a 301/302/303 followed)
	srvBase string
}

func (h *hopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.gets.Add(1)
	}
	n, _ := strconv.Atoi(r.URL.Path[len("/hop/"):])
	if n >= h.hops {
		h.landed.Add(1)
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Location", h.srvBase+"/hop/"+strconv.Itoa(n+1))
	w.WriteHeader(h.status)
}

// suppliedClients are the ways an application hands its own HTTP client to the destination
// (uploader.WithHTTPClient sets Config.HTTPClient, uploader.WithTransport Config.Transport);
// each must get the destination's redirect policy whatever the client says.
func suppliedClients(tr http.RoundTripper) map[string]func(*httpdest.Config) {
	return map[string]func(*httpdest.Config){
		"HTTPClient that follows every redirect": func(c *httpdest.Config) {
			c.HTTPClient = &http.Client{Transport: tr, CheckRedirect: followEverything}
		},
		"HTTPClient with Go's default redirect policy": func(c *httpdest.Config) {
			c.HTTPClient = &http.Client{Transport: tr}
		},
		"Transport": func(c *httpdest.Config) { c.Transport = tr },
	}
}

func TestSuppliedClient_KeepsTheRedirectPolicy(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		hops       int
		wantClass  delivery.Class
		wantStatus int
		wantLanded int64
	}{
		{"a 307 is followed with the body", http.StatusTemporaryRedirect, 1, delivery.ClassSuccess, 200, 1},
		{"a 308 is followed with the body", http.StatusPermanentRedirect, 1, delivery.ClassSuccess, 200, 1},
		{"three 307 hops are followed", http.StatusTemporaryRedirect, 3, delivery.ClassSuccess, 200, 1},
		{"a fourth 307 hop is a failure", http.StatusTemporaryRedirect, 4, delivery.ClassRejected, 307, 0},
		{"a 301 is a failure, not followed", http.StatusMovedPermanently, 1, delivery.ClassRejected, 301, 0},
		{"a 302 is a failure, not followed", http.StatusFound, 1, delivery.ClassRejected, 302, 0},
		{"a 303 is a failure, not followed", http.StatusSeeOther, 1, delivery.ClassRejected, 303, 0},
	}
	for clientName, supply := range suppliedClients(http.DefaultTransport.(*http.Transport).Clone()) {
		for _, tt := range tests {
			t.Run(clientName+"/"+tt.name, func(t *testing.T) {
				hs := &hopServer{status: tt.status, hops: tt.hops}
				srv := httptest.NewServer(hs)
				t.Cleanup(srv.Close)
				hs.srvBase = srv.URL
				cfg := httpdest.Config{Endpoint: srv.URL + "/hop/0"}
				supply(&cfg)
				d, err := httpdest.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = d.Close() })
				o := d.Send(context.Background(), delivery.Batch{Events: [][]byte{[]byte(`{"type":"track"}`)}})
				if o.Class != tt.wantClass || o.Status != tt.wantStatus {
					t.Errorf("Send = %v status %d (%v), want %v status %d", o.Class, o.Status, o.Err, tt.wantClass, tt.wantStatus)
				}
				if got := hs.landed.Load(); got != tt.wantLanded {
					t.Errorf("%d request(s) reached the last hop, want %d", got, tt.wantLanded)
				}
				if got := hs.gets.Load(); got != 0 {
					t.Errorf("%d request(s) arrived without their POST body (a redirect followed as GET)", got)
				}
			})
		}
	}
}

func TestSuppliedClient_NeverFollowsHTTPSToHTTP(t *testing.T) {
	var plain atomic.Int64
	insecure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(insecure.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", insecure.URL+"/v1/batch")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(secure.Close)

	// The TLS server's own client trusts its certificate.
	for clientName, supply := range suppliedClients(secure.Client().Transport) {
		t.Run(clientName, func(t *testing.T) {
			before := plain.Load()
			cfg := httpdest.Config{Endpoint: secure.URL + "/v1/batch"}
			supply(&cfg)
			d, err := httpdest.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
			o := d.Send(context.Background(), delivery.Batch{Events: [][]byte{[]byte(`{"type":"track"}`)}})
			if o.Class != delivery.ClassRejected || o.Status != http.StatusTemporaryRedirect {
				t.Errorf("Send = %v status %d (%v), want rejected with the 307", o.Class, o.Status, o.Err)
			}
			if n := plain.Load() - before; n != 0 {
				t.Errorf("the batch went over plain http %d time(s) after an https redirect", n)
			}
		})
	}
}

func TestSuppliedClient_IsNotModified(t *testing.T) {
	hc := &http.Client{CheckRedirect: followEverything}
	d, err := httpdest.New(httpdest.Config{Endpoint: "http://127.0.0.1:1/v1/batch", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if hc.CheckRedirect == nil || hc.CheckRedirect(nil, nil) != nil {
		t.Error("the application's own client lost its CheckRedirect: the destination must use a copy")
	}
}
