package agent_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
)

const oneTrack = `{"type":"track","userId":"u1","event":"E"}`

// trackWith posts one event with writeKey as the Basic auth user ("" sends none).
func (h *harness) trackWith(writeKey string) int {
	h.t.Helper()
	return h.do(req{path: "/v1/track", body: []byte(oneTrack), writeKey: writeKey}).code
}

func TestAgent_Reconfigure_SwapsTheIngestCredentials(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after agent.Config
		accepted      []string // write keys answered 200 after the swap ("" = none sent)
		refused       []string // answered 401 after the swap
	}{
		{name: "rotated write key", before: agent.Config{WriteKeys: []string{"wk-old"}}, after: agent.Config{WriteKeys: []string{"wk-new"}},
			accepted: []string{"wk-new"}, refused: []string{"wk-old", ""}},
		{name: "both keys during a rotation", before: agent.Config{WriteKeys: []string{"wk-old"}}, after: agent.Config{WriteKeys: []string{"wk-old", "wk-new"}},
			accepted: []string{"wk-old", "wk-new"}, refused: []string{"wk-other", ""}},
		{name: "auth turned on", before: agent.Config{}, after: agent.Config{Token: "tok"},
			refused: []string{"", "wk-any"}},
		{name: "auth turned off on loopback", before: agent.Config{WriteKeys: []string{"wk-old"}}, after: agent.Config{},
			accepted: []string{"", "wk-old", "wk-any"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: tc.before})
			if err := h.agent.Reconfigure(tc.after); err != nil {
				t.Fatalf("Reconfigure: %v", err)
			}
			for _, k := range tc.accepted {
				if code := h.trackWith(k); code != http.StatusOK {
					t.Errorf("write key %q after the swap: %d, want 200", k, code)
				}
			}
			for _, k := range tc.refused {
				if code := h.trackWith(k); code != http.StatusUnauthorized {
					t.Errorf("write key %q after the swap: %d, want 401", k, code)
				}
			}
		})
	}
}

func TestAgent_Reconfigure_InvalidCredentials_ChangeNothing(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk-old"}}})
	err := h.agent.Reconfigure(agent.Config{WriteKeys: []string{"wk-new", " "}})
	var ke *errs.KeyError
	if !errors.As(err, &ke) || ke.Key != "ingest.write_keys" {
		t.Fatalf("Reconfigure with an empty write key: %v; want an error naming ingest.write_keys", err)
	}
	if code := h.trackWith("wk-old"); code != http.StatusOK {
		t.Errorf("old key after a rejected swap: %d, want 200", code)
	}
	if code := h.trackWith("wk-new"); code != http.StatusUnauthorized {
		t.Errorf("key of the rejected swap: %d, want 401", code)
	}
}

func TestAgent_RecordReload_CountsItAndShowsTheLastOnStatus(t *testing.T) {
	h := start(t, setup{})
	if st := h.status(); st.Reload != nil {
		t.Fatalf("status before any reload: %+v, want no reload", st.Reload)
	}
	h.agent.RecordReload(agent.Reload{Result: agent.ReloadApplied, Applied: []string{"batch.max_events"}})
	h.agent.RecordReload(agent.Reload{Result: agent.ReloadPartial, Message: "data_dir needs a restart",
		Applied: []string{"log.level"}, Restart: []string{"data_dir"}})
	st := h.status().Reload
	if st == nil || st.Seq != 2 || st.Result != agent.ReloadPartial || st.Message != "data_dir needs a restart" ||
		!slices.Equal(st.Applied, []string{"log.level"}) || !slices.Equal(st.RestartNeeded, []string{"data_dir"}) || st.At.IsZero() {
		t.Fatalf("status reload = %+v; want the second (partial, data_dir)", st)
	}
	mfs := h.scrape()
	for result, want := range map[string]float64{agent.ReloadApplied: 1, agent.ReloadPartial: 1, agent.ReloadRejected: 0} {
		if got, ok := value(mfs, "outbox_config_reloads_total", map[string]string{"result": result}); !ok || got != want {
			t.Errorf("outbox_config_reloads_total{result=%q} = %v (present %v), want %v", result, got, ok, want)
		}
	}
}
