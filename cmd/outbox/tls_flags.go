package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addClientTLSFlags adds --ca-file, --cert and --key to a client command (or, as persistent
// flags, to a command group), for an agent that serves HTTPS (ingest.tls.*).
func addClientTLSFlags(fs *pflag.FlagSet) {
	fs.String("ca-file", "", "PEM CA certificates to trust for an https agent (default: the system roots)")
	fs.String("cert", "", "PEM client certificate for an agent that requires one (ingest.tls.client_ca_file); needs --key")
	fs.String("key", "", "PEM private key of --cert")
}

// clientTLS is the TLS configuration of --ca-file, --cert and --key; nil when none is given.
// Each problem is a usage error naming the flag.
func clientTLS(cmd *cobra.Command) (*tls.Config, error) {
	get := func(name string) string {
		v, _ := cmd.Flags().GetString(name) // "" when the command has no such flag
		return v
	}
	caFile, certFile, keyFile := get("ca-file"), get("cert"), get("key")
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, usageErrorf("--ca-file %s cannot be read: %w", caFile, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, usageErrorf("--ca-file %s holds no PEM certificate; pass the CA that signed the agent's certificate", caFile)
		}
	}
	switch {
	case certFile != "" && keyFile == "":
		return nil, usageErrorf("--cert needs --key (the certificate's private key)")
	case keyFile != "" && certFile == "":
		return nil, usageErrorf("--key needs --cert (the client certificate)")
	case certFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, usageErrorf("--cert %s and --key %s: %w; pass a PEM client certificate and its PEM private key", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// clientHTTP is the HTTP client of a client command: TLS per its flags.
func clientHTTP(cmd *cobra.Command) (*http.Client, bool, error) {
	cfg, err := clientTLS(cmd)
	if err != nil || cfg == nil {
		return &http.Client{}, false, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	// HTTP/1.1: a client command sends a request or two, and HTTP/2's setup hides the TLS
	// alert (such as "certificate required") that says what to fix.
	tr.ForceAttemptHTTP2 = false
	return &http.Client{Transport: tr}, true, nil
}

// tlsHint is what to do about a TLS failure reaching the agent, or "" when err is not one.
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "pass --ca-file with the CA that signed the agent's certificate"
	case errors.As(err, &hostErr):
		return "the agent's certificate does not name this host; use --agent with a name or IP address it lists"
	case errors.As(err, &recErr):
		return "the agent does not speak TLS there; use an http:// URL with --agent"
	case strings.Contains(err.Error(), "certificate required"), strings.Contains(err.Error(), "bad certificate"),
		strings.Contains(err.Error(), "unknown certificate authority"):
		return "the agent requires a client certificate its CA signed (ingest.tls.client_ca_file); pass --cert and --key"
	}
	return ""
}

// defaultScheme is the scheme of the agent URL built from ingest.listen: https when the
// configuration serves TLS or a TLS flag is given.
func defaultScheme(agentTLS, tlsFlags bool) string {
	if agentTLS || tlsFlags {
		return "https://"
	}
	return "http://"
}
