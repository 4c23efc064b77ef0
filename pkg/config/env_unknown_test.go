package config

import (
	"strings"
	"testing"
)

func TestNearestEnvName_NamesTheKeyOfATypoAndNothingForKubernetesServiceVariables(t *testing.T) {
	cases := []struct{ name, want string }{
		{"OUTBOX_UPLOAD_WRTIE_KEY", "OUTBOX_UPLOAD_WRITE_KEY"},
		{"OUTBOX_UPLOAD_WRITEKEY", "OUTBOX_UPLOAD_WRITE_KEY"},
		{"OUTBOX_BATCH_INTERVALL", "OUTBOX_BATCH_INTERVAL"},
		{"OUTBOX_DATADIR", "OUTBOX_DATA_DIR"},
		{"OUTBOX_PORT", ""},
		{"OUTBOX_SERVICE_HOST", ""},
		{"OUTBOX_SERVICE_PORT", ""},
		{"OUTBOX_PORT_8089_TCP_ADDR", ""},
		{"OUTBOX_SRC", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearestEnvName(tc.name); got != tc.want {
				t.Errorf("nearestEnvName(%s) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestLoad_UnknownEnvIsListedAndIgnored(t *testing.T) {
	env := []string{
		"OUTBOX_PORT=tcp://10.0.0.1:8089",
		"OUTBOX_SERVICE_HOST=10.0.0.1",
		"OUTBOX_UPLOAD_WRTIE_KEY=wk-typo-secret",
		"OUTBOX_BATCH_INTERVAL=3s",
	}
	out, err := show(t, env)
	if err != nil {
		t.Fatalf("outbox config with unknown OUTBOX_ variables: %v", err)
	}
	for _, want := range []string{
		"# ignored: environment variable OUTBOX_PORT is not a configuration key\n",
		"# ignored: environment variable OUTBOX_SERVICE_HOST is not a configuration key\n",
		"# ignored: environment variable OUTBOX_UPLOAD_WRTIE_KEY is not a configuration key; did you mean OUTBOX_UPLOAD_WRITE_KEY?\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("outbox config does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wk-typo-secret") || strings.Contains(out, "10.0.0.1") {
		t.Errorf("outbox config printed the value of an unknown variable:\n%s", out)
	}
	if got := configLines(t, out)["batch.interval"]; got[0] != "3s" {
		t.Errorf("batch.interval = %v, want 3s from the environment beside the unknown variables", got)
	}
}
