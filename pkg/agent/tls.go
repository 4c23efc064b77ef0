package agent

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/outboxhq/outbox/pkg/errs"
)

// TLSConfig is ingest.tls.*: HTTPS, and optionally mutual TLS, on the ingest listener. The
// zero value serves plain HTTP.
type TLSConfig struct {
	// CertFile is ingest.tls.cert_file: PEM certificate chain, the server's own certificate
	// first. Set together with KeyFile.
	CertFile string
	// KeyFile is ingest.tls.key_file: the PEM private key of CertFile's first certificate.
	KeyFile string
	// ClientCAFile is ingest.tls.client_ca_file: PEM CA certificates. When set, every client
	// must present a certificate signed by one of them (mTLS); it needs CertFile and KeyFile.
	ClientCAFile string
}

// Enabled reports whether the listener serves HTTPS.
func (t TLSConfig) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// mutual reports whether client certificates are required.
func (t TLSConfig) mutual() bool { return t.ClientCAFile != "" }

// tlsMaterial is one consistent reading of the TLS files: what a handshake uses, and the raw
// bytes it came from (a reload that reads the same bytes changes nothing).
type tlsMaterial struct {
	cert    *tls.Certificate
	clients *x509.CertPool // nil without mTLS
	raw     [3][]byte      // cert, key, client CA file contents
}

// same reports whether m was read from the same bytes as o.
func (m *tlsMaterial) same(o *tlsMaterial) bool {
	for i := range m.raw {
		if !bytes.Equal(m.raw[i], o.raw[i]) {
			return false
		}
	}
	return true
}

// validate checks the combination of keys without reading the files.
func (t TLSConfig) validate() error {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return &errs.KeyError{Key: "ingest.tls.key_file", Related: []string{"ingest.tls.cert_file"}, Err: fmt.Errorf(
			"ingest.tls.cert_file is set but ingest.tls.key_file is not: HTTPS needs both, the certificate and its private key (or set neither for plain HTTP)")}
	case t.KeyFile != "" && t.CertFile == "":
		return &errs.KeyError{Key: "ingest.tls.cert_file", Related: []string{"ingest.tls.key_file"}, Err: fmt.Errorf(
			"ingest.tls.key_file is set but ingest.tls.cert_file is not: HTTPS needs both, the certificate and its private key (or set neither for plain HTTP)")}
	case t.ClientCAFile != "" && !t.Enabled():
		return &errs.KeyError{Key: "ingest.tls.client_ca_file", Related: []string{"ingest.tls.cert_file", "ingest.tls.key_file"}, Err: fmt.Errorf(
			"ingest.tls.client_ca_file requires client certificates over HTTPS: set ingest.tls.cert_file and ingest.tls.key_file too")}
	}
	return nil
}

// loadTLS reads and checks the files of t. Each problem is an *errs.KeyError naming the key
// of the file at fault, the path and what to do.
func loadTLS(t TLSConfig) (*tlsMaterial, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	m := &tlsMaterial{}
	var err error
	if m.raw[0], err = readTLSFile("ingest.tls.cert_file", t.CertFile); err != nil {
		return nil, err
	}
	if m.raw[1], err = readTLSFile("ingest.tls.key_file", t.KeyFile); err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(m.raw[0], m.raw[1])
	if err != nil {
		return nil, &errs.KeyError{Key: "ingest.tls.cert_file", Related: []string{"ingest.tls.key_file"}, Err: fmt.Errorf(
			"ingest.tls.cert_file %q and ingest.tls.key_file %q are not a usable pair: %w; the cert file must hold PEM certificates, "+
				"the server's first, and the key file that certificate's PEM private key", t.CertFile, t.KeyFile, err)}
	}
	m.cert = &cert
	if t.mutual() {
		if m.raw[2], err = readTLSFile("ingest.tls.client_ca_file", t.ClientCAFile); err != nil {
			return nil, err
		}
		m.clients = x509.NewCertPool()
		if !m.clients.AppendCertsFromPEM(m.raw[2]) {
			return nil, errs.KeyErrorf("ingest.tls.client_ca_file",
				"ingest.tls.client_ca_file %q holds no PEM certificate: it must contain the CA certificates that sign client certificates", t.ClientCAFile)
		}
	}
	return m, nil
}

// readTLSFile reads one of the TLS files, naming its key when it cannot.
func readTLSFile(key, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errs.KeyErrorf(key, "%s %q cannot be read: %w; check the path and that the agent's user may read it", key, path, err)
	}
	return b, nil
}
