package segment

import (
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Open opens a client (uploader.Open) that delivers to the HTTP destination of cfg's upload.*
// keys and of its sources (each source's endpoint, write key and headers), with the HTTP
// options among opts (uploader.WithHTTPClient, WithTransport, WithRequestHook,
// WithClassifier). A uploader.WithDestination among opts wins over it, as it does in
// uploader.Open.
func Open(cfg uploader.Config, opts ...uploader.Option) (*uploader.Client, error) {
	return uploader.Open(cfg, append([]uploader.Option{uploader.WithDestinationFunc(Destination)}, opts...)...)
}

// Destination builds the HTTP destination from what uploader.Open has read: the
// uploader.DestinationFunc that Open passes. It fails only when upload.ca_file cannot be used.
func Destination(p uploader.DestinationParams) (delivery.Destination, error) {
	d, err := httpdest.New(httpdest.Config{
		Endpoint:       p.Upload.Endpoint,
		WriteKey:       p.Upload.WriteKey,
		Headers:        p.Upload.Headers,
		Routes:         p.Routes,
		Gzip:           p.Upload.Gzip,
		CAFile:         p.Upload.CAFile,
		MaxConcurrency: p.Upload.MaxConcurrency,
		HTTPClient:     p.HTTPClient,
		Transport:      p.Transport,
		Hook:           p.Hook,
		Classify:       p.Classify,
		Clock:          p.Clock,
		Logger:         p.Logger,
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}
