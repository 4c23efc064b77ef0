package config

import (
	"slices"
	"testing"
	"time"
)

func TestKeys_EveryKeyIsLiveOrSaysWhyItNeedsARestart(t *testing.T) {
	for i := range keys {
		d := &keys[i]
		if d.live == (d.restart != "") {
			t.Errorf("%s: live %v, restart reason %q; want exactly one", d.key, d.live, d.restart)
		}
	}
}

func TestChanges_SplitsTheChangedKeysIntoLiveAndRestart(t *testing.T) {
	old := Default()
	next := Default()
	next.Batch.MaxEvents = 7
	next.Upload.WriteKey = "wk-new"
	next.Upload.Headers = map[string]string{"X-Team": "data"}
	next.Retry.BackoffCap = time.Minute * 2
	next.DataDir = "/elsewhere"
	next.Agent.Listen = "127.0.0.1:1"
	live, restart := changes(&old, &next)
	if want := []string{"upload.write_key", "upload.headers", "batch.max_events", "retry.backoff_cap"}; !slices.Equal(live, want) {
		t.Errorf("live changes %v, want %v (in key table order)", live, want)
	}
	if want := []string{"data_dir", "ingest.listen"}; !slices.Equal(restart, want) {
		t.Errorf("restart changes %v, want %v", restart, want)
	}
	kept := withKeys(old, &next, live)
	if kept.Batch.MaxEvents != 7 || kept.Upload.WriteKey != "wk-new" || kept.DataDir != old.DataDir || kept.Agent.Listen != old.Agent.Listen {
		t.Errorf("withKeys took %+v; want the live keys new and the others old", kept)
	}
	if l, r := changes(&old, &old); len(l)+len(r) != 0 {
		t.Errorf("no change reported as %v and %v", l, r)
	}
}
