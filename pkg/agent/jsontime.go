package agent

import (
	"encoding/json"
	"time"
)

// TimeLayout is how the agent writes every time in its JSON answers: RFC 3339 in UTC with
// exactly three fractional digits (milliseconds, truncated), e.g. "2025-01-02T03:04:05.600Z".
// Go's time.Time decodes it unchanged.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// msTime is a time.Time that encodes with TimeLayout in UTC.
type msTime time.Time

// MarshalJSON writes the time with TimeLayout in UTC.
func (t msTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(TimeLayout) + `"`), nil
}

// msPtr is t as an msTime, nil when t is nil or zero (the field is then omitted).
func msPtr(t *time.Time) *msTime {
	if t == nil || t.IsZero() {
		return nil
	}
	m := msTime(*t)
	return &m
}

// The answer types keep plain time.Time fields (cmd/outbox decodes them as such); these
// MarshalJSON methods only override how their times are written. A field declared in the
// wrapping struct wins over the embedded one of the same JSON name.

// MarshalJSON writes the times with TimeLayout.
func (u UploadStatus) MarshalJSON() ([]byte, error) {
	type plain UploadStatus
	return json.Marshal(struct {
		plain
		LastAttempt  *msTime `json:"last_attempt,omitempty"`
		LastSuccess  *msTime `json:"last_success,omitempty"`
		FailingSince *msTime `json:"failing_since,omitempty"`
	}{plain(u), msPtr(u.LastAttempt), msPtr(u.LastSuccess), msPtr(u.FailingSince)})
}

// MarshalJSON writes the time with TimeLayout.
func (r RetryStatus) MarshalJSON() ([]byte, error) {
	type plain RetryStatus
	return json.Marshal(struct {
		plain
		WaitingUntil *msTime `json:"waiting_until,omitempty"`
	}{plain(r), msPtr(r.WaitingUntil)})
}

// MarshalJSON writes the times with TimeLayout.
func (a AuthPauseStatus) MarshalJSON() ([]byte, error) {
	type plain AuthPauseStatus
	return json.Marshal(struct {
		plain
		Since     *msTime `json:"since,omitempty"`
		NextProbe *msTime `json:"next_probe,omitempty"`
	}{plain(a), msPtr(a.Since), msPtr(a.NextProbe)})
}

// MarshalJSON writes the time with TimeLayout.
func (f FlushWaiting) MarshalJSON() ([]byte, error) {
	type plain FlushWaiting
	return json.Marshal(struct {
		plain
		Until msTime `json:"until"`
	}{plain(f), msTime(f.Until)})
}

// MarshalJSON writes the times with TimeLayout.
func (d DeadBatch) MarshalJSON() ([]byte, error) {
	type plain DeadBatch
	return json.Marshal(struct {
		plain
		At           msTime  `json:"at"`
		FirstAttempt *msTime `json:"first_attempt,omitempty"`
		LastAttempt  *msTime `json:"last_attempt,omitempty"`
	}{plain(d), msTime(d.At), msPtr(d.FirstAttempt), msPtr(d.LastAttempt)})
}
