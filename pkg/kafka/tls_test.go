package kafka_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// selfSigned returns a TLS server configuration for 127.0.0.1 and the path of a PEM file
// holding its certificate, to be trusted as the CA.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, caFile
}

func TestSend_TLS_TrustsTheCAFile_RefusesAnUnknownCA(t *testing.T) {
	serverTLS, caFile := selfSigned(t)
	c := startCluster(t, kfake.TLS(serverTLS))

	d := newDest(t, c, kafka.Config{TLS: true, CAFile: caFile})
	evs, ids := trackEvents("tls", 10)
	mustClass(t, send(t, d, evs), uploader.ClassSuccess)

	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(pem)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
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
	mustClass(t, o, uploader.ClassRetryable)
	if o.NetError != uploader.NeverSent {
		t.Fatalf("net error %q (err %v), want never_sent", o.NetError, o.Err)
	}
}
