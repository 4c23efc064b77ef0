package uploader_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// The redirect policy (a 3xx is a failure, only 307/308 followed) holds for a client the
// application supplies, whatever that client's own CheckRedirect says.
func TestOpen_SuppliedClient_A301IsDeadLetteredNotFollowed(t *testing.T) {
	options := map[string]func(http.RoundTripper) uploader.Option{
		"WithHTTPClient that follows every redirect": func(tr http.RoundTripper) uploader.Option {
			return uploader.WithHTTPClient(&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return nil }})
		},
		"WithTransport": func(tr http.RoundTripper) uploader.Option { return uploader.WithTransport(tr) },
	}
	for name, option := range options {
		t.Run(name, func(t *testing.T) {
			var followed atomic.Int64
			mux := http.NewServeMux()
			mux.HandleFunc("/v1/batch", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/moved", http.StatusMovedPermanently)
			})
			mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
				followed.Add(1) // a body-less GET that would "succeed" and lose the batch
				w.WriteHeader(http.StatusOK)
			})
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)

			cfg := uploader.DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.Upload.Endpoint = srv.URL + "/v1/batch"
			client, err := segment.Open(cfg, option(http.DefaultTransport.(*http.Transport).Clone()))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			t.Cleanup(func() { _ = client.Close(ctx) })
			if err := client.Enqueue(ctx, map[string]any{"type": "track", "userId": "u1", "event": "Paid"}); err != nil {
				t.Fatal(err)
			}
			if err := client.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			list, err := client.DeadLetters().List()
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Info.Status != http.StatusMovedPermanently {
				t.Errorf("dead letters = %+v, want the batch with status 301", list)
			}
			if n := followed.Load(); n != 0 {
				t.Errorf("the 301 was followed %d time(s)", n)
			}
		})
	}
}
