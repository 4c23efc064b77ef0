package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// recordRetries is how many times kgo retries a retriable error inside one attempt before the
// error reaches the worker's budgets: enough to ride out a leader election, few enough that a
// lasting failure shows up, with its Kafka name, in status and logs within seconds.
const recordRetries = 3

// metadataMinAge is the shortest interval between two metadata refreshes, down from kgo's 5 s:
// kgo refreshes before each retry of a failed produce, so this paces those retries.
const metadataMinAge = time.Second

// closeWait bounds Close: the client's connections are torn down in the background after it.
// It is well under a second, so that a shutdown ends within its deadline plus one second even
// when Close's deadline cut several produces in flight and the brokers no longer answer.
const closeWait = 500 * time.Millisecond

// SourceHeader is the record header that names the source of the record's event (the
// source's name, "default" for the default one; never its write key), on every record.
const SourceHeader = "outbox-source"

// defaultSource names the source of a batch whose Source is "".
const defaultSource = "default"

// Destination produces each batch into its source's own topic (Config.Topics), else into
// Config.Topic. It implements delivery.BoundedDestination: Send is safe for concurrent use
// (each call keeps its own state; the kgo client is shared), up to MaxInFlight batches at
// once; Close is called once after the last Send.
type Destination struct {
	cfg  Config // its Topics are New's own copy, read by concurrent Sends
	cl   *kgo.Client
	log  *slog.Logger
	key  keyFunc
	live attempts // the attempts in progress, for the kgo hooks

	maxInFlight int // the producer's in-flight limit per broker (MaxInFlight)

	closeOnce sync.Once
	closeErr  error

	authErr atomic.Pointer[error] // the cluster's refusal of our credentials, until a login works
}

// refused records that a connection failed SASL authentication and ends the attempt in
// progress: no retry with the same credentials can succeed. It is kept (kgo may fail later
// records with a plain EOF of the same refusal, between attempts) until a connection gets
// through.
func (d *Destination) refused(err error) {
	d.authErr.Store(&err)
	d.live.each(func(st *attemptState) { st.refused(err) })
}

// orRefused turns a transient outcome into the refusal of our credentials when that is what
// the cluster last said.
func (d *Destination) orRefused(o delivery.Outcome) delivery.Outcome {
	if o.Class != delivery.ClassRetryable && o.Class != delivery.ClassRateLimited {
		return o
	}
	if p := d.authErr.Load(); p != nil {
		a := authOutcome(*p, o.Written)
		a.Bytes = o.Bytes
		return a
	}
	return o
}

var _ delivery.BoundedDestination = (*Destination)(nil)

// Option configures New.
type Option func(*options)

type options struct {
	log     *slog.Logger
	kgoOpts []kgo.Opt
}

// WithLogger sets the logger of the destination (and of kgo, at warn and above); nil
// discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClientOptions adds kgo options after the destination's own, for tuning (for example
// kgo.ProducerLinger or kgo.ProducerBatchMaxBytes). Options that weaken delivery
// (kgo.RequiredAcks other than all, kgo.DisableIdempotentWrite) break the guarantees this
// package documents: the caller takes them on.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(o *options) { o.kgoOpts = append(o.kgoOpts, opts...) }
}

// New validates cfg and builds the producer. It does not connect: the first Send does, so an
// unreachable cluster at start is an outage the budgets ride out, not a failure to start.
func New(cfg Config, opts ...Option) (*Destination, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	log := o.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Topics = maps.Clone(cfg.Topics) // the caller's map may change after New
	d := &Destination{cfg: cfg, log: log.With("destination", "kafka"), key: keyFor(cfg.key())}
	kopts, err := d.clientOptions()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(kopts, o.kgoOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	d.cl, d.maxInFlight = cl, producerInFlight(cl)
	if cfg.SASL.Mechanism == SASLPlain && !cfg.TLS {
		d.log.Warn("SASL plain without TLS sends the password in clear; set upload.kafka.tls: true")
	}
	return d, nil
}

// clientOptions are the kgo options of cfg: idempotent (kgo's default) with acks from every
// in-sync replica, said explicitly so that no default change can weaken them.
func (d *Destination) clientOptions() ([]kgo.Opt, error) {
	c := d.cfg
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.ClientID(c.clientID()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(recordRetries),
		// The worker hands over a whole batch and waits for it: lingering for more records
		// (kgo's default 10 ms) would only add that much to every batch.
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(metadataMinAge),
		kgo.ProducerBatchCompression(codec(c.compression())),
		kgo.DisableClientMetrics(), // no telemetry pushed to the user's cluster; a prompt Close
		kgo.WithHooks(hooks{d}),
		kgo.WithLogger(kgoLogger{d.log}),
	}
	if c.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pool, err := loadCAFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("%w: upload.kafka.ca_file: %w", ErrInvalidConfig, err)
			}
			tc.RootCAs = pool
		}
		opts = append(opts, kgo.DialTLSConfig(tc)) // kgo sets ServerName to each broker's host
	}
	if m := mechanism(c.SASL); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func codec(name string) kgo.CompressionCodec {
	switch name {
	case CompressionNone:
		return kgo.NoCompression()
	case CompressionGzip:
		return kgo.GzipCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZstd:
		return kgo.ZstdCompression()
	}
	return kgo.SnappyCompression()
}

func mechanism(s SASLConfig) sasl.Mechanism {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return nil
}

// Name is "kafka".
func (d *Destination) Name() string { return "kafka" }

// Config returns the configuration the destination was built with.
func (d *Destination) Config() Config {
	c := d.cfg
	c.Topics = maps.Clone(c.Topics) // Sends read d's own
	return c
}

// Send produces every event of b as one record and waits until the cluster has acknowledged
// them all, one failed, or ctx ends. When ctx ends first, Send returns at once: the records
// still in flight are abandoned (kgo settles them in the background) and the batch stays
// queued, to be produced again.
func (d *Destination) Send(ctx context.Context, b delivery.Batch) delivery.Outcome {
	n := len(b.Events)
	if n == 0 {
		return delivery.Outcome{Class: delivery.ClassSuccess}
	}
	st := newAttempt(n)
	d.live.add(st)
	defer d.live.remove(st)

	// The events are valid only until Send returns, but an abandoned record outlives it in
	// kgo's buffers: copy them, all into one block.
	size := 0
	for _, ev := range b.Events {
		size += len(ev)
	}
	block := make([]byte, 0, size)
	recs := make([]kgo.Record, n)
	source, topic := d.route(b.Source)
	// One header slice for every record of the batch: kgo only reads it.
	headers := []kgo.RecordHeader{{Key: SourceHeader, Value: []byte(source)}}
	for i, ev := range b.Events {
		start := len(block)
		block = append(block, ev...)
		v := block[start:len(block):len(block)]
		recs[i] = kgo.Record{Topic: topic, Value: v, Key: d.key(v), Headers: headers}
	}
	for i := range recs {
		d.cl.Produce(ctx, &recs[i], st.promise)
	}
	select {
	case <-st.done:
	case <-st.authFail:
		o := authOutcome(st.authErr, st.written.Load())
		o.Bytes = size
		return o
	case <-ctx.Done():
		o := cutShort(ctx, st)
		o.Bytes = size
		return d.orRefused(o)
	}
	o := st.outcome()
	o.Bytes = size
	return d.orRefused(o)
}

// route is the name of source as its records' header carries it, and the topic of its records.
func (d *Destination) route(source string) (name, topic string) {
	if source == "" {
		source = defaultSource
	}
	if t, ok := d.cfg.Topics[source]; ok {
		return source, t
	}
	return source, d.cfg.Topic
}

// Close closes the producer. Records still buffered (abandoned attempts) fail; their batches
// are still queued. It waits at most closeWait, so a hung connection cannot hold shutdown.
func (d *Destination) Close() error {
	d.closeOnce.Do(func() {
		done := make(chan struct{})
		go func() { d.cl.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			d.closeErr = fmt.Errorf("kafka: the client did not close within %s; it finishes in the background", closeWait)
		}
	})
	return d.closeErr
}

// Ping checks that a broker answers (with the configured TLS and SASL), for a start-up
// probe. It is not needed before Send.
func (d *Destination) Ping(ctx context.Context) error { return d.cl.Ping(ctx) }
