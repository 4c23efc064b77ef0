package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/outboxhq/outbox/pkg/config"
	"github.com/spf13/cobra"
)

// agentClient talks to a running agent's admin and ingest API for the client commands.
type agentClient struct {
	base       string // "http://127.0.0.1:8089", no trailing slash
	token      string // ingest.token, sent as Bearer on ingest routes
	key        string // first of ingest.write_keys, sent as Basic auth username on ingest routes
	adminToken string // admin.token, sent as Bearer on admin routes
	hc         *http.Client
}

// addAgentFlag adds --agent to a client command.
func addAgentFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "agent", "", "agent base URL (default http:// + ingest.listen, e.g. http://127.0.0.1:8089; https:// with ingest.tls or --ca-file)")
	addClientTLSFlags(cmd.Flags())
}

// newAgentClient builds the client for --agent (or ingest.listen) with the configured credential.
func (a *app) newAgentClient(cmd *cobra.Command, agentURL string) (*agentClient, *config.Loaded, error) {
	lc, err := a.load(cmd)
	if err != nil {
		return nil, nil, err
	}
	hc, tlsFlags, err := clientHTTP(cmd)
	if err != nil {
		return nil, nil, err
	}
	base := agentURL
	if base == "" {
		host := lc.Config.Agent.Listen
		if strings.HasPrefix(host, ":") || strings.HasPrefix(host, "0.0.0.0:") || strings.HasPrefix(host, "[::]:") {
			host = "127.0.0.1" + host[strings.LastIndex(host, ":"):]
		}
		base = defaultScheme(lc.Config.Agent.TLS.Enabled(), tlsFlags) + host
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, usageErrorf("--agent %q is not an http(s) URL (e.g. http://127.0.0.1:8089)", agentURL)
	}
	c := &agentClient{base: strings.TrimRight(base, "/"), token: lc.Config.Agent.Token, adminToken: lc.Config.Agent.Admin.Token, hc: hc}
	if len(lc.Config.Agent.WriteKeys) > 0 {
		c.key = lc.Config.Agent.WriteKeys[0]
	}
	return c, lc, nil
}

// eventPrefix matches the "event N: " an agent's 400 message starts with.
var eventPrefix = regexp.MustCompile(`^event \d+: `)

// agentError is a non-2xx answer of the agent.
type agentError struct {
	Status  int
	Message string
	Index   *int
	admin   bool // the request was to an admin route
}

func (e *agentError) Error() string {
	msg := fmt.Sprintf("the agent answered %d %s", e.Status, http.StatusText(e.Status))
	text := e.Message
	if e.Index != nil {
		// The agent's message starts "event N: " with N counted within its request; name the
		// event once, by Index (which send re-bases onto everything it sent).
		text = fmt.Sprintf("event %d: %s", *e.Index, eventPrefix.ReplaceAllString(text, ""))
	}
	if text != "" {
		msg += ": " + text
	}
	switch e.Status {
	case http.StatusUnauthorized:
		if e.admin {
			msg += "; set OUTBOX_ADMIN_TOKEN (or admin.token in the config file) to the agent's admin.token"
		} else {
			msg += "; set OUTBOX_INGEST_TOKEN or OUTBOX_INGEST_WRITE_KEYS (or the config file) to a credential the agent accepts"
		}
	case http.StatusServiceUnavailable:
		msg += "; the agent cannot take events right now (full queue, failing disk or shutting down), try again shortly"
	}
	return msg
}

// do sends one request to an admin route (status, flush, dead letters) with admin.token; a
// JSON body is encoded from in (nil: no body) and a 2xx answer is decoded into out (nil:
// ignored).
func (c *agentClient) do(ctx context.Context, method, path string, in, out any) error {
	return c.send(ctx, method, path, in, out, true)
}

// ingest is do for an ingest route, with the ingest credential (ingest.token, else the
// first write key).
func (c *agentClient) ingest(ctx context.Context, method, path string, in, out any) error {
	return c.send(ctx, method, path, in, out, false)
}

// httpToHTTPS is what Go's HTTPS server answers a plain HTTP request.
const httpToHTTPS = "Client sent an HTTP request to an HTTPS server"

func (c *agentClient) send(ctx context.Context, method, path string, in, out any, admin bool) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil || method == http.MethodPost {
		// The agent's state-changing admin routes take application/json only (a cross-site
		// form cannot send it), with or without a body.
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case admin && c.adminToken != "":
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	case admin:
		// No admin.token: the agent answers admin routes on loopback without a credential.
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.key != "":
		req.SetBasicAuth(c.key, "")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.reachError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the agent's answer from %s: %w", c.base, err)
	}
	if resp.StatusCode == http.StatusBadRequest && strings.HasPrefix(c.base, "http://") && strings.Contains(string(raw), httpToHTTPS) {
		return fmt.Errorf("the agent at %s speaks HTTPS (ingest.tls is set): pass --agent https://HOST:PORT and --ca-file "+
			"with the CA that signed its certificate (or set ingest.tls.* in the configuration the command reads)", c.base)
	}
	if resp.StatusCode/100 != 2 {
		ae := &agentError{Status: resp.StatusCode, admin: admin}
		var eb struct {
			Error string `json:"error"`
			Index *int   `json:"index"`
		}
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			ae.Message, ae.Index = eb.Error, eb.Index
		} else {
			ae.Message = strings.TrimSpace(string(raw))
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if p, ok := out.(*json.RawMessage); ok {
		*p = append((*p)[:0], raw...)
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the agent at %s answered something that is not the expected JSON (%w); is it an outbox agent of the same version?", c.base, err)
	}
	return nil
}

// reachError explains a failure to reach the agent.
func (c *agentClient) reachError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("no answer from the agent at %s in time: %w", c.base, err)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot reach the agent at %s: connection refused; start it with 'outbox run', or pass --agent URL if it listens elsewhere", c.base)
	}
	if hint := tlsHint(err); hint != "" {
		return fmt.Errorf("cannot reach the agent at %s: %w; %s", c.base, err, hint)
	}
	return fmt.Errorf("cannot reach the agent at %s: %w; check that 'outbox run' is running and --agent points at it", c.base, err)
}

// requestTimeout bounds a client command's single request when it has no wait of its own.
const requestTimeout = 30 * time.Second
