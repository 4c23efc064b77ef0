// Package redact hides the secrets a configured URL may carry before it is shown: in a log
// line, an error message or `outbox config`. A collector URL often holds a credential, as
// user:password@ or as a query parameter (?api_key=…); the host, port and path stay, since
// they are what an operator needs to tell which endpoint is meant.
package redact

import (
	"net/url"
	"strings"
)

// Placeholder replaces every hidden value.
const Placeholder = "REDACTED"

// URL returns s with its userinfo (user name and password: a write key is often the user
// name) and the value of every query parameter replaced by Placeholder; the parameters'
// names are kept. Text that does not parse as a URL has everything between "://" and the
// last "@" of its authority, and everything after "?", hidden the same way.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return roughly(s)
	}
	if u.User != nil {
		u.User = url.User(Placeholder)
	}
	if u.RawQuery != "" {
		u.RawQuery = query(u.RawQuery)
	}
	return u.String()
}

// query hides the value of every parameter of a raw query, keeping the names in order.
func query(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue || name != "" {
			parts[i] = name + "=" + Placeholder
		}
	}
	return strings.Join(parts, "&")
}

// roughly hides the userinfo and query of text that is not a valid URL.
func roughly(s string) string {
	if q := strings.IndexByte(s, '?'); q >= 0 {
		s = s[:q] + "?" + Placeholder
	}
	scheme := strings.Index(s, "://")
	if scheme < 0 {
		return s
	}
	rest := s[scheme+3:]
	authority := rest
	if slash := strings.IndexAny(rest, "/?"); slash >= 0 {
		authority = rest[:slash]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		s = s[:scheme+3] + Placeholder + rest[at:]
	}
	return s
}
