package uploader

import "github.com/outboxhq/outbox/pkg/httpdest"

// newHTTPDestination builds the default destination (pkg/httpdest) from the upload.* keys and
// the HTTP options (WithHTTPClient, WithTransport, WithRequestHook, WithClassifier).
func newHTTPDestination(u UploadConfig, routes httpdest.RoutesFunc, o options) (*httpdest.Destination, error) {
	return httpdest.New(httpdest.Config{
		Endpoint:       u.Endpoint,
		WriteKey:       u.WriteKey,
		Headers:        u.Headers,
		Routes:         routes,
		Gzip:           u.Gzip,
		CAFile:         u.CAFile,
		MaxConcurrency: u.MaxConcurrency,
		HTTPClient:     o.httpClient,
		Transport:      o.transport,
		Hook:           o.hook,
		Classify:       o.classify,
		Clock:          o.clock,
		Logger:         o.logger,
	})
}
