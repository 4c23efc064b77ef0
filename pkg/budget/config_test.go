package budget_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
)

func TestDefaultConfig_MatchesSpecAndIsValid(t *testing.T) {
	want := budget.Config{
		MaxRetries: 10, BackoffBase: 500 * time.Millisecond, BackoffCap: 60 * time.Second,
		MaxTotalBackoff: 12 * time.Hour, RetryAfterCap: 300 * time.Second, MaxRateLimitDuration: 12 * time.Hour,
	}
	if got := budget.DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfig_Validate_NamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*budget.Config)
		want   []string // substrings of the error; nil means valid
	}{
		{"zero max_retries means no retries and is valid", func(c *budget.Config) { c.MaxRetries = 0 }, nil},
		{"cap equal to base is valid", func(c *budget.Config) { c.BackoffCap = c.BackoffBase }, nil},
		{"negative max_retries", func(c *budget.Config) { c.MaxRetries = -1 }, []string{"retry.max_retries (-1) must not be negative"}},
		{"zero backoff_base", func(c *budget.Config) { c.BackoffBase = 0 }, []string{"retry.backoff_base (0s) must be greater than zero"}},
		{"negative backoff_cap", func(c *budget.Config) { c.BackoffCap = -time.Second }, []string{"retry.backoff_cap (-1s) must be greater than zero"}},
		{"cap below base", func(c *budget.Config) { c.BackoffBase, c.BackoffCap = 2*time.Second, time.Second },
			[]string{"retry.backoff_cap (1s) is below retry.backoff_base (2s)"}},
		{"zero max_total_backoff", func(c *budget.Config) { c.MaxTotalBackoff = 0 }, []string{"retry.max_total_backoff"}},
		{"zero retry_after_cap", func(c *budget.Config) { c.RetryAfterCap = 0 }, []string{"retry.retry_after_cap"}},
		{"negative max_rate_limit_duration", func(c *budget.Config) { c.MaxRateLimitDuration = -1 }, []string{"retry.max_rate_limit_duration"}},
		{"every problem is reported", func(c *budget.Config) { *c = budget.Config{MaxRetries: -5} },
			[]string{"retry.max_retries", "retry.backoff_base", "retry.backoff_cap", "retry.max_total_backoff", "retry.retry_after_cap", "retry.max_rate_limit_duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := budget.DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			if !errors.Is(err, errs.ErrInvalidConfig) {
				t.Fatalf("got %v, want errs.ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
