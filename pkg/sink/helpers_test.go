package sink_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// body builds a batch body whose events carry the given messageIds ("" omits the field).
func body(ids ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"batch":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		if id == "" {
			fmt.Fprintf(&b, `{"type":"track","event":"e%d","userId":"u"}`, i)
			continue
		}
		fmt.Fprintf(&b, `{"type":"track","event":"e%d","userId":"u","properties":{"messageId":"nested"},"messageId":%q}`, i, id)
	}
	b.WriteString(`],"sentAt":"2024-01-02T03:04:05.678Z"}`)
	return []byte(b.String())
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// newClient returns a client that never reuses connections between tests and never follows
// redirects unless follow is set.
func newClient(follow bool) *http.Client {
	c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	if !follow {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

type result struct {
	status int
	header http.Header
	body   string
}

// post sends one batch and returns the response, or the transport error.
func post(ctx context.Context, c *http.Client, url string, b []byte, hdr map[string]string) (result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	return result{status: resp.StatusCode, header: resp.Header, body: string(rb)}, nil
}

// mustPost posts and fails the test on a transport error.
func mustPost(t *testing.T, url string, b []byte, hdr map[string]string) result {
	t.Helper()
	r, err := post(t.Context(), newClient(false), url, b, hdr)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return r
}
