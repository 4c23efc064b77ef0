package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestLoad_Kafka_ErrorsNameTheKeyAndItsSource(t *testing.T) {
	base := []string{"OUTBOX_UPLOAD_DESTINATION=kafka", "OUTBOX_UPLOAD_KAFKA_BROKERS=kafka-1:9092", "OUTBOX_UPLOAD_KAFKA_TOPIC=events"}
	tests := []struct {
		name  string
		env   []string
		wants []string
	}{
		{"no brokers", []string{"OUTBOX_UPLOAD_DESTINATION=kafka", "OUTBOX_UPLOAD_KAFKA_TOPIC=events"},
			[]string{"upload.kafka.brokers (from default)", "is required"}},
		{"a broker without a port", append(base[:1:1], "OUTBOX_UPLOAD_KAFKA_BROKERS=kafka-1", "OUTBOX_UPLOAD_KAFKA_TOPIC=events"),
			[]string{"upload.kafka.brokers (from env OUTBOX_UPLOAD_KAFKA_BROKERS)", "host:port"}},
		{"no topic", base[:2], []string{"upload.kafka.topic (from default)", "is required"}},
		{"a bad topic name", append(base[:2:2], "OUTBOX_UPLOAD_KAFKA_TOPIC=ev ents"), []string{"upload.kafka.topic", "letters, digits"}},
		{"an unknown key mode", append(base, "OUTBOX_UPLOAD_KAFKA_KEY=email"), []string{"upload.kafka.key", "messageId, userId, none"}},
		{"an unknown codec", append(base, "OUTBOX_UPLOAD_KAFKA_COMPRESSION=brotli"), []string{"upload.kafka.compression"}},
		{"a CA file without TLS", append(base, "OUTBOX_UPLOAD_KAFKA_CA_FILE=/etc/ssl/ca.pem"),
			[]string{"upload.kafka.ca_file (from env OUTBOX_UPLOAD_KAFKA_CA_FILE) and upload.kafka.tls (from default)"}},
		{"an unreadable CA file", append(base, "OUTBOX_UPLOAD_KAFKA_TLS=true", "OUTBOX_UPLOAD_KAFKA_CA_FILE=/nonexistent/ca.pem"),
			[]string{"upload.kafka.ca_file", "cannot read /nonexistent/ca.pem"}},
		{"an unknown SASL mechanism", append(base, "OUTBOX_UPLOAD_KAFKA_SASL_MECHANISM=gssapi"), []string{"upload.kafka.sasl.mechanism", "gssapi"}},
		{"SASL without a password", append(base, "OUTBOX_UPLOAD_KAFKA_SASL_MECHANISM=plain", "OUTBOX_UPLOAD_KAFKA_SASL_USERNAME=u"),
			[]string{"upload.kafka.sasl.password (from default)", "OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD"}},
		{"a source's topic that is no topic name", append(base, "OUTBOX_SOURCES_APP_A_TOPIC=app/a"),
			[]string{"sources.app-a.topic (from env OUTBOX_SOURCES_APP_A_TOPIC)", "letters, digits", "upload.kafka.topic"}},
		{"a password without a mechanism", append(base, "OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD=pw-secret"),
			[]string{"upload.kafka.sasl.mechanism"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := show(t, tt.env)
			if err == nil {
				t.Fatal("config accepted")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "pw-secret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestLoad_Kafka_HTTPDestinationIgnoresTheKafkaKeys(t *testing.T) {
	if _, err := show(t, []string{"OUTBOX_UPLOAD_KAFKA_COMPRESSION=zstd"}); err != nil {
		t.Fatalf("config with destination http and an unused kafka key: %v", err)
	}
}

func TestLoad_Kafka_PasswordIsRedacted_AndIsNoFlag(t *testing.T) {
	file := writeFile(t, "outbox.yaml", `
upload:
  destination: kafka
  kafka:
    brokers: [kafka-1:9092, kafka-2:9092]
    topic: events
    sasl:
      mechanism: scram-sha-512
      username: outbox
      password: file-secret-pw
`)
	out, err := show(t, nil, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "file-secret-pw") {
		t.Fatalf("outbox config shows the SASL password:\n%s", out)
	}
	got := configLines(t, out)
	if g := got["upload.kafka.sasl.password"]; g[0] != redacted || !strings.HasPrefix(g[1], "file ") {
		t.Errorf("upload.kafka.sasl.password = %v, want redacted from the file", g)
	}
	if g := got["upload.kafka.brokers"]; g[0] != `["kafka-1:9092", "kafka-2:9092"]` {
		t.Errorf("upload.kafka.brokers = %v", g)
	}
	out, err = show(t, []string{"OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD=env-secret-pw"}, "--config", file)
	if err != nil || strings.Contains(out, "env-secret-pw") || configLines(t, out)["upload.kafka.sasl.password"][1] != "env OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD" {
		t.Errorf("env password: err %v, output:\n%s", err, out)
	}
	for i := range keys {
		if strings.HasPrefix(keys[i].key, "upload.kafka.sasl.password") && (keys[i].flag != "" || !keys[i].secret) {
			t.Errorf("%s must be a secret without a flag", keys[i].key)
		}
	}
}

func TestLoad_Kafka_SourcesOwnTopicsReachTheDestinationsConfig(t *testing.T) {
	file := writeFile(t, "outbox.yaml", `
upload:
  destination: kafka
  kafka:
    brokers: [kafka-1:9092]
    topic: events
sources:
  app-a:
    write_keys: [ingest-a-secret]
    topic: app-a.events
  app-b:
    write_keys: [ingest-b-secret]
`)
	env := []string{"OUTBOX_SOURCES_APP_C_TOPIC=app-c.events"}
	out, err := show(t, env, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	got := configLines(t, out)
	if g := got["sources.app-a.topic"]; g[0] != `"app-a.events"` || !strings.HasPrefix(g[1], "file ") {
		t.Errorf("sources.app-a.topic = %v, want app-a.events from the file", g)
	}
	if g := got["sources.app-c.topic"]; g[0] != `"app-c.events"` || g[1] != "env OUTBOX_SOURCES_APP_C_TOPIC" {
		t.Errorf("sources.app-c.topic = %v, want app-c.events from the environment", g)
	}
	lc, err := Load(Input{File: file, Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	k := lc.Config.kafkaConfig()
	if fmt.Sprint(k.Topics) != "map[app-a:app-a.events app-c:app-c.events]" || k.Topic != "events" {
		t.Errorf("the Kafka destination's topics %v (topic %q), want app-a's and app-c's own, app-b on events", k.Topics, k.Topic)
	}
	if lc.Config.Dest.Kafka.Topics != nil {
		t.Errorf("upload.kafka.* holds sources' topics %v; sources.<name>.topic is their one place", lc.Config.Dest.Kafka.Topics)
	}
}
