package uploader_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestParseDeadFilter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		text    map[string]string
		want    uploader.DeadFilter
		wantErr string // in the error; its field first
	}{
		{name: "no field matches every batch", text: nil, want: uploader.DeadFilter{}},
		{name: "source is a source's name", text: map[string]string{"source": "checkout"}, want: uploader.DeadFilter{Source: "checkout"}},
		{name: "a relay source's name is a source", text: map[string]string{"source": "relay-3f2a"}, want: uploader.DeadFilter{Source: "relay-3f2a"}},
		{name: "since takes an RFC 3339 time", text: map[string]string{"since": "2026-04-30T10:00:00+02:00"},
			want: uploader.DeadFilter{Since: time.Date(2026, 4, 30, 8, 0, 0, 0, time.UTC)}},
		{name: "since takes a duration ago", text: map[string]string{"since": "2h"}, want: uploader.DeadFilter{Since: now.Add(-2 * time.Hour)}},
		{name: "until takes days ago", text: map[string]string{"until": "7d"}, want: uploader.DeadFilter{Until: now.Add(-7 * 24 * time.Hour)}},
		{name: "a window of since and until", text: map[string]string{"since": "3h", "until": "1h"},
			want: uploader.DeadFilter{Since: now.Add(-3 * time.Hour), Until: now.Add(-time.Hour)}},
		{name: "status takes an HTTP status", text: map[string]string{"status": "429"}, want: uploader.DeadFilter{Status: "429"}},
		{name: "status takes a Kafka error name", text: map[string]string{"status": "NOT_ENOUGH_REPLICAS"}, want: uploader.DeadFilter{Status: "NOT_ENOUGH_REPLICAS"}},
		{name: "status takes a network error class", text: map[string]string{"status": "maybe_sent"}, want: uploader.DeadFilter{Status: "maybe_sent"}},
		{name: "reason takes each reason", text: map[string]string{"reason": "too_large"}, want: uploader.DeadFilter{Reason: uploader.DeadTooLarge}},
		{name: "every field together", text: map[string]string{"source": "a", "since": "1h", "status": "500", "reason": "budget_spent"},
			want: uploader.DeadFilter{Source: "a", Since: now.Add(-time.Hour), Status: "500", Reason: uploader.DeadBudgetSpent}},

		{name: "an unknown field is refused, naming the filters", text: map[string]string{"reasons": "rejected"},
			wantErr: `reasons "rejected": not a dead-letter filter; the filters are source, since, until, status, reason`},
		{name: "an empty value is refused", text: map[string]string{"source": ""}, wantErr: `source "": empty`},
		{name: "a source name with capitals is refused", text: map[string]string{"source": "Checkout"}, wantErr: `source "Checkout": not a source name`},
		{name: "since that is neither a time nor a duration is refused", text: map[string]string{"since": "yesterday"},
			wantErr: `since "yesterday": not a time: give an RFC 3339 time`},
		{name: "a negative duration is refused", text: map[string]string{"until": "-2h"}, wantErr: `until "-2h": a duration ago cannot be negative`},
		{name: "negative days are refused", text: map[string]string{"since": "-1d"}, wantErr: `since "-1d": a duration ago cannot be negative`},
		{name: "since not before until is refused", text: map[string]string{"since": "1h", "until": "2h"},
			wantErr: `since "1h": is not before until "2h", so no batch could match`},
		{name: "an HTTP status out of range is refused", text: map[string]string{"status": "42"}, wantErr: `status "42": not an HTTP status: give one from 100 to 599`},
		{name: "a status of the wrong form is refused", text: map[string]string{"status": "5xx"}, wantErr: `status "5xx": not a result code`},
		{name: "an unknown reason is refused, listing the reasons", text: map[string]string{"reason": "rejeted"},
			wantErr: `reason "rejeted": not a dead-letter reason; use one of rejected, too_large, budget_spent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := uploader.ParseDeadFilter(tt.text, now)
			if tt.wantErr != "" {
				var fe *uploader.DeadFilterError
				if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("ParseDeadFilter(%v) = %+v, %v; want a *DeadFilterError starting %q", tt.text, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDeadFilter(%v) = %+v, %v; want %+v", tt.text, got, err, tt.want)
			}
			// Its text form reads back as the same filter.
			back, err := uploader.ParseDeadFilter(uploader.DeadFilterText(got), now)
			if err != nil || !back.Since.Equal(got.Since) || !back.Until.Equal(got.Until) ||
				back.Source != got.Source || back.Status != got.Status || back.Reason != got.Reason {
				t.Fatalf("DeadFilterText(%+v) = %v reads back as %+v, %v", got, uploader.DeadFilterText(got), back, err)
			}
		})
	}
}
