package kafka_test

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSend_TLS_TrustsTheCAFile_RefusesAnUnknownCA(t *testing.T) {
	ca := testutil.NewCA(t, "kfake test CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	testutil.WriteFile(t, caFile, ca.PEM)
	c := startCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{ca.Server(t).TLS}, MinVersion: tls.VersionTLS12}))

	d := newDest(t, c, kafka.Config{TLS: true, CAFile: caFile})
	evs, ids := trackEvents("tls", 10)
	mustClass(t, send(t, d, evs), delivery.ClassSuccess)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	got := 0
	for got < len(ids) {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(*kgo.Record) { got++ })
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
	}

	// Without the CA (system roots), the handshake fails: a network error before anything
	// was sent, retried through the budget.
	untrusting := newDest(t, c, kafka.Config{TLS: true})
	o := send(t, untrusting, evs)
	mustClass(t, o, delivery.ClassRetryable)
	if o.NetError != delivery.NeverSent {
		t.Fatalf("net error %q (err %v), want never_sent", o.NetError, o.Err)
	}
}
