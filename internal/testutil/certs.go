package testutil

import (
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
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority made for one test: it signs server and client certificates.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, PEM
}

// KeyPair is a certificate signed by a test CA, in PEM and ready for crypto/tls.
type KeyPair struct {
	CertPEM, KeyPEM []byte
	Serial          *big.Int
	TLS             tls.Certificate
}

var serial atomic.Int64

// NewCA makes a fresh ECDSA P-256 CA, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, key := create(t, tmpl, nil, nil)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// create makes a fresh P-256 key and a certificate of tmpl for it, with the next serial,
// signed by parent (self-signed when parent is nil).
func create(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// Pool is a cert pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(t testing.TB) *KeyPair {
	t.Helper()
	return ca.issue(t, "outbox test server", x509.ExtKeyUsageServerAuth, time.Now().Add(24*time.Hour))
}

// ExpiredServer issues a server certificate that expired a minute ago.
func (ca *CA) ExpiredServer(t testing.TB) *KeyPair {
	t.Helper()
	return ca.issue(t, "outbox expired server", x509.ExtKeyUsageServerAuth, time.Now().Add(-time.Minute))
}

// Client issues a client certificate (for mTLS).
func (ca *CA) Client(t testing.TB) *KeyPair {
	t.Helper()
	return ca.issue(t, "outbox test client", x509.ExtKeyUsageClientAuth, time.Now().Add(24*time.Hour))
}

func (ca *CA) issue(t testing.TB, name string, usage x509.ExtKeyUsage, notAfter time.Time) *KeyPair {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, key := create(t, tmpl, ca.Cert, ca.key)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	kp := &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Serial:  tmpl.SerialNumber,
	}
	if kp.TLS, err = tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil {
		t.Fatal(err)
	}
	return kp
}

// Write writes the pair as dir/tls.crt and dir/tls.key and returns the two paths.
func (kp *KeyPair) Write(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	WriteFile(t, certFile, kp.CertPEM)
	WriteFile(t, keyFile, kp.KeyPEM)
	return certFile, keyFile
}

// WriteFile writes b to path (mode 0600), failing the test on error.
func WriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
