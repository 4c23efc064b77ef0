// Package cafile reads upload.ca_file: the PEM certificates a client trusts besides the
// system roots. The uploader's configuration check and the HTTP destination read it the same
// way, so a file that the check accepts is one the destination can use.
package cafile

import (
	"crypto/x509"
	"fmt"
	"os"
)

// Load returns the system roots plus the PEM certificates in path, or an error naming
// upload.ca_file and the file.
func Load(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upload.ca_file %q: %w", path, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("upload.ca_file %q: no PEM certificate found", path)
	}
	return pool, nil
}
