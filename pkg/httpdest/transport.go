package httpdest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"

	"github.com/outboxhq/outbox/internal/cafile"
	"github.com/outboxhq/outbox/internal/redact"
	"github.com/outboxhq/outbox/internal/version"
	"github.com/outboxhq/outbox/pkg/delivery"
)

const (
	// maxRedirects is how many 307/308 hops one attempt follows.
	maxRedirects = 3
	// snippetBytes bounds the response body kept for a dead letter.
	snippetBytes = 1 << 10
	// drainBytes bounds how much more of a response is read so that the
	// connection can be reused; a longer body costs the connection instead.
	drainBytes = 4 << 10
	// requestWriteBuffer is the default client's write buffer per connection: a request's
	// headers and a typical gzipped body.
	requestWriteBuffer = 64 << 10
)

// checkRedirect is the redirect policy of every client the destination uses.
// Only 307 and 308 are followed: they keep the method and the body (Go's
// client replays it through Request.GetBody). A 301, 302 or 303 would make
// Go's client send a body-less GET that "succeeds" and loses the batch, so
// the 3xx itself is returned and classified as rejected. More than
// maxRedirects hops, or a hop from https to http, also stop at the 3xx.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.Response == nil {
		return http.ErrUseLastResponse
	}
	switch req.Response.StatusCode {
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return http.ErrUseLastResponse
	}
	if req.Method != http.MethodPost || len(via) > maxRedirects {
		return http.ErrUseLastResponse
	}
	if prev := via[len(via)-1]; prev.URL.Scheme == "https" && req.URL.Scheme != "https" {
		return http.ErrUseLastResponse
	}
	return nil
}

// newHTTPClient builds the default client: a clone of http.DefaultTransport
// (keep-alive on, proxies from the environment) with the CA file added to
// the system roots when set. The per-attempt timeout is applied through the
// request context, not Client.Timeout, so that shutdown and timeout share one
// path.
func newHTTPClient(cfg Config) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = max(4, cfg.MaxConcurrency) // one kept connection per batch in flight
	// A gzipped batch body (~40 KB for 500 events) then fits in the connection's buffer with
	// the headers and goes out in one write; with the default 4 KiB buffer it went through
	// net's generic copy, which allocates a 32 KiB buffer for every request.
	tr.WriteBufferSize = requestWriteBuffer
	if cfg.CAFile != "" {
		pool, err := cafile.Load(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}, nil
}

// requestBuilder holds what every attempt's request needs; headers are built
// anew for each attempt.
type requestBuilder struct {
	endpoint  string
	auth      string // "Basic …", empty without a write key
	userAgent string
	gzip      bool
	headers   map[string]string
	hook      RequestHook
}

func newRequestBuilder(cfg Config) *requestBuilder {
	return &requestBuilder{
		endpoint:  cfg.Endpoint,
		auth:      basicAuth(cfg.WriteKey),
		userAgent: version.UserAgent(),
		gzip:      cfg.Gzip,
		headers:   maps.Clone(cfg.Headers),
		hook:      cfg.Hook,
	}
}

// basicAuth is the Authorization value for a write key (the key as the user name, no
// password), or "" without a key.
func basicAuth(writeKey string) string {
	if writeKey == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(writeKey+":"))
}

// build returns the request for one attempt. retryCount is the value of
// X-Retry-Count; 0 leaves the header out (a batch's first attempt). An error
// from the request hook is returned as a *HookError.
func (rb *requestBuilder) build(ctx context.Context, p []byte, retryCount int) (*http.Request, error) {
	// A *bytes.Reader body makes NewRequest set ContentLength and GetBody,
	// which 307/308 redirects use to replay the body.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rb.endpoint, bytes.NewReader(p))
	if err != nil {
		return nil, &delivery.ConfigError{Key: "upload.endpoint", Err: redactErrURL(err)}
	}
	for k, v := range rb.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	if rb.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if rb.auth != "" {
		req.Header.Set("Authorization", rb.auth)
	}
	req.Header.Set("User-Agent", rb.userAgent)
	if retryCount > 0 {
		req.Header.Set("X-Retry-Count", strconv.Itoa(retryCount))
	}
	if rb.hook != nil {
		if err := rb.hook(req); err != nil {
			return nil, &HookError{Err: err}
		}
	}
	return req, nil
}

// send performs one attempt and consumes the response: it keeps a snippet,
// drains at most drainBytes more so the connection can be reused, and closes
// the body. resp is nil when err is not.
func send(hc *http.Client, req *http.Request, trace *SendTrace) (*http.Response, []byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, nil, trace.Wrap(redactErrURL(err))
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
	_ = resp.Body.Close()
	return resp, snippet, nil
}

// redactErrURL hides the credentials of the URL a *url.Error names (net/http's errors quote
// the request's URL, userinfo and query included), so that an upload failure can be logged
// and shown as it is.
func redactErrURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.URL(ue.URL)
	}
	return err
}
