package kafka_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/kafka"
)

func TestConfig_Validate_NamesTheKeyOfEveryProblem(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := kafka.Config{Brokers: []string{"kafka-1:9092"}, Topic: "events"}
	with := func(edit func(*kafka.Config)) kafka.Config { c := ok; edit(&c); return c }
	tests := []struct {
		name    string
		cfg     kafka.Config
		keys    []string // every problem's key, in order; none: valid
		related string
	}{
		{"the minimal configuration is valid", ok, nil, ""},
		{"no brokers and no topic", kafka.Config{}, []string{"upload.kafka.brokers", "upload.kafka.topic"}, ""},
		{"a broker without a port", with(func(c *kafka.Config) { c.Brokers = []string{"kafka-1"} }), []string{"upload.kafka.brokers"}, ""},
		{"a port out of range", with(func(c *kafka.Config) { c.Brokers = []string{"kafka-1:70000"} }), []string{"upload.kafka.brokers"}, ""},
		{"a topic with a space", with(func(c *kafka.Config) { c.Topic = "my events" }), []string{"upload.kafka.topic"}, ""},
		{"a topic of 250 characters", with(func(c *kafka.Config) { c.Topic = strings.Repeat("t", 250) }), []string{"upload.kafka.topic"}, ""},
		{"an unknown key mode", with(func(c *kafka.Config) { c.Key = "email" }), []string{"upload.kafka.key"}, ""},
		{"an unknown codec", with(func(c *kafka.Config) { c.Compression = "brotli" }), []string{"upload.kafka.compression"}, ""},
		{"a CA file without TLS", with(func(c *kafka.Config) { c.CAFile = notPEM }), []string{"upload.kafka.ca_file"}, "upload.kafka.tls"},
		{"a CA file that holds no certificate", with(func(c *kafka.Config) { c.TLS, c.CAFile = true, notPEM }), []string{"upload.kafka.ca_file"}, ""},
		{"an unknown SASL mechanism", with(func(c *kafka.Config) { c.SASL.Mechanism = "gssapi" }), []string{"upload.kafka.sasl.mechanism"}, ""},
		{"SASL without username and password", with(func(c *kafka.Config) { c.SASL.Mechanism = kafka.SASLPlain }),
			[]string{"upload.kafka.sasl.username", "upload.kafka.sasl.password"}, "upload.kafka.sasl.mechanism"},
		{"sources' own topics are valid", with(func(c *kafka.Config) { c.Topics = map[string]string{"app-a": "app-a.events", "default": "main"} }), nil, ""},
		{"a source's topic with a slash and another's empty", with(func(c *kafka.Config) { c.Topics = map[string]string{"app-b": "", "app-a": "a/b"} }),
			[]string{"sources.app-a.topic", "sources.app-b.topic"}, ""},
		{"credentials without a mechanism", with(func(c *kafka.Config) { c.SASL.Password = "pw-secret" }), []string{"upload.kafka.sasl.mechanism"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.keys) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, kafka.ErrInvalidConfig) || !errors.Is(err, errs.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			kes := errs.KeyErrors(err)
			var got []string
			for _, ke := range kes {
				got = append(got, ke.Key)
				if !strings.Contains(ke.Error(), ke.Key) {
					t.Errorf("%q does not name its key %s", ke.Error(), ke.Key)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.keys) {
				t.Fatalf("problems name %v, want %v (%v)", got, tt.keys, err)
			}
			if tt.related != "" && (len(kes[0].Related) == 0 || kes[0].Related[0] != tt.related) {
				t.Errorf("Related = %v, want %s", kes[0].Related, tt.related)
			}
			if strings.Contains(err.Error(), "pw-secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestConfig_PrintedOrLogged_ThePasswordIsRedacted(t *testing.T) {
	c := kafka.Config{Brokers: []string{"k:9092"}, Topic: "t", SASL: kafka.SASLConfig{Mechanism: kafka.SASLPlain, Username: "u", Password: "pw-secret"}}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v", c, c), c.LogValue().String()} {
		if strings.Contains(s, "pw-secret") {
			t.Errorf("shows the password: %s", s)
		}
	}
	if !strings.Contains(c.String(), "<redacted>") {
		t.Errorf("String = %s, want the password shown as <redacted>", c.String())
	}
	c.Topics = map[string]string{"b": "tb", "a": "ta"}
	for _, s := range []string{c.String(), c.LogValue().String()} {
		if !strings.Contains(s, "a=ta,b=tb") {
			t.Errorf("%s does not list the sources' topics in order as a=ta,b=tb", s)
		}
	}
}

func TestNew_InvalidConfig_IsRefusedBeforeAnyConnection(t *testing.T) {
	if _, err := kafka.New(kafka.Config{Topic: "t"}); !errors.Is(err, kafka.ErrInvalidConfig) {
		t.Fatalf("New without brokers = %v, want ErrInvalidConfig", err)
	}
	d, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t"})
	if err != nil {
		t.Fatalf("New = %v; it must not connect", err)
	}
	if got := d.Config(); got.Topic != "t" {
		t.Errorf("Config().Topic = %q", got.Topic)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
