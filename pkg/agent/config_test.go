package agent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
)

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     agent.Config
		wantErr string // substring; "" for valid
	}{
		{"zero config is valid (loopback default)", agent.Config{}, ""},
		{"loopback v4 without auth is fine", agent.Config{Listen: "127.0.0.1:9000"}, ""},
		{"loopback v6 without auth is fine", agent.Config{Listen: "[::1]:9000"}, ""},
		{"localhost without auth is fine", agent.Config{Listen: "localhost:9000"}, ""},
		{"all interfaces without auth is refused", agent.Config{Listen: "0.0.0.0:8089"}, "ingest.allow_unauthenticated"},
		{"empty host without auth is refused", agent.Config{Listen: ":8089"}, "ingest.listen"},
		{"a host name without auth is refused", agent.Config{Listen: "example.com:8089"}, "ingest.write_keys"},
		{"non-loopback with a write key is fine", agent.Config{Listen: "0.0.0.0:8089", WriteKeys: []string{"k"}}, ""},
		{"non-loopback with a token is fine", agent.Config{Listen: "0.0.0.0:8089", Token: "t"}, ""},
		{"non-loopback allowed explicitly is fine", agent.Config{Listen: "0.0.0.0:8089", AllowUnauthenticated: true}, ""},
		{"listen without a port is refused", agent.Config{Listen: "127.0.0.1"}, "ingest.listen"},
		{"an empty write key is refused", agent.Config{WriteKeys: []string{"k", " "}}, "ingest.write_keys[1]"},
		{"a negative request limit is refused", agent.Config{MaxRequestBytes: -1}, "limits.max_request_bytes"},
		{"a negative event limit is refused", agent.Config{MaxEventBytes: -1}, "limits.max_event_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestNew_RefusesNonLoopbackWithoutAuth(t *testing.T) {
	h := start(t, setup{}) // any open client will do
	_, err := agent.New(agent.Config{Listen: "0.0.0.0:8089", WriteKeys: nil}, h.client, nil)
	if !errors.Is(err, agent.ErrUnauthenticated) {
		t.Fatalf("New = %v, want ErrUnauthenticated", err)
	}
	for _, key := range []string{"ingest.listen", "ingest.allow_unauthenticated"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestConfig_SecretsNotInErrors(t *testing.T) {
	err := agent.Config{Listen: "nope", WriteKeys: []string{"wk-secret"}, Token: "tok-secret"}.Validate()
	if err == nil {
		t.Fatal("want an error for a listen address without a port")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error leaks a secret: %v", err)
	}
}
