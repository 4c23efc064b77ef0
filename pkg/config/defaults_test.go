package config

import (
	"os"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Every key's default is one value, seen in three places: config.example.yaml, the key table
// (Default, what `outbox config` shows and `outbox run` uses), and the package that owns
// the key, which fills that value in when the key's field is left at its zero value (what a
// library user who sets nothing gets). The test walks the key table, so a key added to it is
// covered without touching the test.
func TestDefaults_ExampleFileKeyTableAndPackageAgreeForEveryKey(t *testing.T) {
	example, err := Load(Input{File: "../../config.example.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	exampleText, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	table := Default()
	// The packages' own answer for every field left unset. The log and upload.destination keys
	// belong to the binary, so the table is their only declaration.
	pkg := Config{
		Config: uploader.Config{}.WithDefaults(),
		Agent:  agent.Config{}.WithDefaults(),
		Log:    table.Log,
		Dest:   DestinationConfig{Kind: table.Dest.Kind, Kafka: kafka.DefaultConfig()},
	}
	// A boolean whose default is true cannot be expressed by a zero value: the package declares
	// it in its DefaultConfig, which the table is built from.
	pkgDefaults := Config{Config: uploader.DefaultConfig(), Agent: agent.DefaultConfig()}
	for i := range keys {
		d := &keys[i]
		t.Run(d.key, func(t *testing.T) {
			if d.named != nil {
				// A per-name key is set per name, and the example configures no source: it
				// shows each such key in a commented-out example.
				if !strings.Contains(string(exampleText), "#       "+strings.TrimPrefix(d.key, d.sectionPrefix()+namePlaceholder+".")+":") {
					t.Errorf("config.example.yaml does not show %s in its commented example", d.key)
				}
				return
			}
			want := displayValue(d, d.field(&table))
			if example.Sources[d.key].Kind != "file" {
				t.Errorf("config.example.yaml does not set %s", d.key)
			} else if got := displayValue(d, d.field(&example.Config)); got != want {
				t.Errorf("config.example.yaml: %s = %s, the key table's default is %s", d.key, got, want)
			}
			got := displayValue(d, d.field(&pkg))
			if b, ok := d.field(&table).(*bool); ok && *b {
				got = displayValue(d, d.field(&pkgDefaults))
			}
			if got != want {
				t.Errorf("%s: the package fills in %s when it is unset, the key table's default is %s", d.key, got, want)
			}
		})
	}
}
