package delivery_test

import (
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
)

func TestClass_String(t *testing.T) {
	want := map[delivery.Class]string{
		delivery.ClassSuccess: "success", delivery.ClassRateLimited: "rate_limited",
		delivery.ClassRetryable: "retryable", delivery.ClassTooLarge: "too_large",
		delivery.ClassRejected: "rejected", delivery.ClassAborted: "aborted",
		delivery.Class(0): "unknown", delivery.Class(99): "unknown",
	}
	for c, s := range want {
		if c.String() != s {
			t.Errorf("Class(%d).String() = %q, want %q", int(c), c.String(), s)
		}
	}
}
