package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// validate is the one validation path of the configuration. loadConfig calls it for every
// command, so `outbox config` rejects exactly what `outbox run` would: first the rules below
// (values that only make sense together, files, addresses), then the uploader's and the agent's
// own Validate on the configurations run hands them. Every error names the key (or, for a rule
// between two keys, both keys) and the source of each value, and is a usageError (exit code 2).
func (lc *loadedConfig) validate() error {
	c := &lc.Config
	if c.DataDir == "" {
		return keyError("data_dir", lc.Sources["data_dir"], errors.New(
			`must not be empty; name a directory (default ./outbox-data), or remove the setting`))
	}
	host, _, err := net.SplitHostPort(c.Ingest.Listen)
	if err != nil {
		return keyError("ingest.listen", lc.Sources["ingest.listen"], fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:8089)", c.Ingest.Listen))
	}
	for i, k := range c.Ingest.WriteKeys {
		if strings.TrimSpace(k) == "" {
			return keyError("ingest.write_keys", lc.Sources["ingest.write_keys"], fmt.Errorf(
				"item %d is empty; a write key must not be empty (remove the item, or use [] for no key)", i))
		}
	}
	if !isLoopback(host) && len(c.Ingest.WriteKeys) == 0 && c.Ingest.Token == "" && !c.Ingest.AllowUnauthenticated {
		return keyError("ingest.listen", lc.Sources["ingest.listen"], fmt.Errorf(
			"%q is not a loopback address and no ingest.write_keys or ingest.token is set; set one (OUTBOX_INGEST_TOKEN) or ingest.allow_unauthenticated: true", c.Ingest.Listen))
	}
	u, err := url.Parse(c.Upload.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return keyError("upload.endpoint", lc.Sources["upload.endpoint"], fmt.Errorf("%q is not an http(s) URL (e.g. https://api.segment.io/v1/batch)", redactURL(c.Upload.Endpoint)))
	}
	if c.Upload.CAFile != "" {
		if err := checkCAFile(c.Upload.CAFile); err != nil {
			return keyError("upload.ca_file", lc.Sources["upload.ca_file"], err)
		}
	}
	if c.Limits.MaxEventBytes > c.Limits.MaxRequestBytes {
		return lc.keysError(fmt.Errorf("limits.max_event_bytes (%d) is larger than limits.max_request_bytes (%d); raise the second or lower the first",
			c.Limits.MaxEventBytes, c.Limits.MaxRequestBytes), "limits.max_event_bytes", "limits.max_request_bytes")
	}
	if c.Retry.BackoffBase > c.Retry.BackoffCap {
		return lc.keysError(fmt.Errorf("retry.backoff_base (%s) is longer than retry.backoff_cap (%s); raise the cap or lower the base",
			c.Retry.BackoffBase, c.Retry.BackoffCap), "retry.backoff_base", "retry.backoff_cap")
	}
	for name := range c.Upload.Headers {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " :\r\n") {
			return keyError("upload.headers", lc.Sources["upload.headers"], fmt.Errorf("%q is not a valid header name", name))
		}
	}
	if err := lc.validateDestination(); err != nil {
		return err
	}
	// The packages' own rules, on exactly the configurations `outbox run` passes them.
	if err := c.uploaderConfig().Validate(); err != nil {
		return lc.packageError(err, uploader.ErrInvalidConfig.Error()+": ")
	}
	if err := c.agentConfig(nil).Validate(); err != nil {
		return lc.packageError(err, agent.ErrUnauthenticated.Error()+": ")
	}
	return nil
}

// checkCAFile makes sure path holds at least one PEM certificate, as the uploader requires.
func checkCAFile(path string) error {
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s holds no PEM certificate", path)
	}
	return nil
}

// keysError is the shape of an error about a rule between keys: every key with its source.
func (lc *loadedConfig) keysError(err error, keys ...string) error {
	if len(keys) == 1 {
		return keyError(keys[0], lc.Sources[keys[0]], err)
	}
	named := make([]string, len(keys))
	for i, k := range keys {
		named[i] = fmt.Sprintf("%s (from %s)", k, lc.Sources[k])
	}
	return usageErrorf("configuration keys %s: %w", strings.Join(named, " and "), err)
}

// packageError turns a Validate error of pkg/uploader or pkg/agent (one line per problem, each
// naming its keys) into configuration errors that also name the source of every key mentioned.
// prefix, the package's sentinel text, is dropped.
func (lc *loadedConfig) packageError(err error, prefix string) error {
	var errs []error
	for _, line := range strings.Split(strings.TrimPrefix(err.Error(), prefix), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if ks := mentionedKeys(line); len(ks) > 0 {
			errs = append(errs, lc.keysError(errors.New(line), ks...))
			continue
		}
		errs = append(errs, usageErrorf("configuration: %s", line))
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return &usageError{err: errors.Join(errs...)}
}

// mentionedKeys lists the configuration keys that text names, in the order they first appear.
// A key counts only as a whole word: "ingest.write_keys[0]" names ingest.write_keys.
func mentionedKeys(text string) []string {
	type hit struct {
		at  int
		key string
	}
	var hits []hit
	for i := range keys {
		k := keys[i].key
		for from := 0; ; {
			j := strings.Index(text[from:], k)
			if j < 0 {
				break
			}
			at, end := from+j, from+j+len(k)
			if (at == 0 || !isKeyByte(text[at-1])) && (end == len(text) || !isKeyByte(text[end]) || text[end] == '.') {
				hits = append(hits, hit{at, k})
				break
			}
			from = end
		}
	}
	sort.Slice(hits, func(a, b int) bool { return hits[a].at < hits[b].at })
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.key
	}
	return out
}

func isKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b == '.'
}

// isLoopback reports whether host ("" meaning every interface) only listens on loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
