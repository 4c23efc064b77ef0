package httpdest

import (
	"fmt"
	"maps"
	"strings"

	"github.com/outboxhq/outbox/pkg/delivery"
)

// defaultSource is the source a batch without its own route belongs to: it goes to
// Config.Endpoint with Config.WriteKey.
const defaultSource = "default"

// builderFor returns the request builder of a batch of source: base itself for the default
// source without a route of its own, base with the route's endpoint, key and headers
// otherwise. A source other than the default one without a route is a configuration error:
// its events stay queued rather than go out under another source's key.
func (d *Destination) builderFor(base *requestBuilder, source string) (*requestBuilder, error) {
	if source == "" || d.routes == nil {
		return base, nil
	}
	r, ok := d.routes(source)
	if !ok {
		if source == defaultSource {
			return base, nil
		}
		return nil, &delivery.ConfigError{Key: "sources." + source, Err: fmt.Errorf("source %q has no upload settings (write key, endpoint); its events stay queued until it is configured again", source)}
	}
	rb := *base
	if r.Endpoint != "" {
		rb.endpoint = r.Endpoint
	}
	rb.auth = basicAuth(r.WriteKey)
	// The shared headers, without a credential of the default source's (an Authorization
	// among upload.headers): a source sends its own key or its own headers, never another's.
	rb.headers = make(map[string]string, len(base.headers)+len(r.Headers))
	for k, v := range base.headers {
		if !strings.EqualFold(k, "Authorization") {
			rb.headers[k] = v
		}
	}
	maps.Copy(rb.headers, r.Headers)
	return &rb, nil
}
