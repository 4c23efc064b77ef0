package budget

import (
	"errors"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
)

// Config holds the retry.* settings. Its mapstructure tags are the keys under
// retry. in the configuration file. There is no zero-value defaulting (MaxRetries 0 is a valid
// "never retry"); start from DefaultConfig and change what you need, then call Validate.
type Config struct {
	// MaxRetries bounds the counted retries of one batch (10 retries = 11 attempts). 0: no retries.
	MaxRetries int `mapstructure:"max_retries"`
	// BackoffBase is the first counted wait, doubled at each retry. Must be > 0.
	BackoffBase time.Duration `mapstructure:"backoff_base"`
	// BackoffCap is the hard ceiling of one counted wait. Must be >= BackoffBase.
	BackoffCap time.Duration `mapstructure:"backoff_cap"`
	// MaxTotalBackoff bounds the time from the first counted failure. Must be > 0.
	MaxTotalBackoff time.Duration `mapstructure:"max_total_backoff"`
	// RetryAfterCap caps each Retry-After wait. Must be > 0.
	RetryAfterCap time.Duration `mapstructure:"retry_after_cap"`
	// MaxRateLimitDuration bounds a rate-limit episode from its first Retry-After. Must be > 0.
	MaxRateLimitDuration time.Duration `mapstructure:"max_rate_limit_duration"`
}

// Default values of Config (docs/CONTRACT.md, "Retry envelope").
const (
	DefaultMaxRetries           = 10
	DefaultBackoffBase          = 500 * time.Millisecond
	DefaultBackoffCap           = 60 * time.Second
	DefaultMaxTotalBackoff      = 12 * time.Hour
	DefaultRetryAfterCap        = 300 * time.Second
	DefaultMaxRateLimitDuration = 12 * time.Hour
)

// DefaultConfig returns the defaults: 10 retries, 500ms base, 60s cap, 12h total, 300s
// Retry-After cap, 12h rate-limit episode.
func DefaultConfig() Config {
	return Config{
		MaxRetries:           DefaultMaxRetries,
		BackoffBase:          DefaultBackoffBase,
		BackoffCap:           DefaultBackoffCap,
		MaxTotalBackoff:      DefaultMaxTotalBackoff,
		RetryAfterCap:        DefaultRetryAfterCap,
		MaxRateLimitDuration: DefaultMaxRateLimitDuration,
	}
}

// Validate reports every invalid field as an *errs.KeyError naming its configuration key, all
// in one error that wraps errs.ErrInvalidConfig.
func (c Config) Validate() error {
	var problems []error
	if c.MaxRetries < 0 {
		problems = append(problems, errs.KeyErrorf("retry.max_retries", "retry.max_retries (%d) must not be negative", c.MaxRetries))
	}
	positive := []struct {
		key string
		v   time.Duration
	}{
		{"retry.backoff_base", c.BackoffBase},
		{"retry.backoff_cap", c.BackoffCap},
		{"retry.max_total_backoff", c.MaxTotalBackoff},
		{"retry.retry_after_cap", c.RetryAfterCap},
		{"retry.max_rate_limit_duration", c.MaxRateLimitDuration},
	}
	for _, p := range positive {
		if p.v <= 0 {
			problems = append(problems, errs.KeyErrorf(p.key, "%s (%s) must be greater than zero", p.key, p.v))
		}
	}
	if c.BackoffBase > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffBase {
		problems = append(problems, &errs.KeyError{Key: "retry.backoff_cap", Related: []string{"retry.backoff_base"},
			Err: fmt.Errorf("retry.backoff_cap (%s) is below retry.backoff_base (%s)", c.BackoffCap, c.BackoffBase)})
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", errs.ErrInvalidConfig, errors.Join(problems...))
}
