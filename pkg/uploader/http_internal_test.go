package uploader

import (
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// openHTTP opens a client that delivers to the HTTP destination of cfg's upload.* keys, as
// segment.Open does: this package's own tests cannot import pkg/segment, which imports it.
func openHTTP(cfg Config, opts ...Option) (*Client, error) {
	build := func(p DestinationParams) (delivery.Destination, error) {
		d, err := httpdest.New(httpdest.Config{Endpoint: p.Upload.Endpoint, WriteKey: p.Upload.WriteKey,
			Headers: p.Upload.Headers, Routes: p.Routes, Gzip: p.Upload.Gzip, Clock: p.Clock, Logger: p.Logger})
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return Open(cfg, append([]Option{WithDestinationFunc(build)}, opts...)...)
}
