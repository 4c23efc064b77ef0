package delivery

import "fmt"

// ConfigError is a failure caused by our own configuration before anything was sent (for
// example an endpoint the HTTP client cannot use, or credentials a Kafka cluster refuses).
// Like a request hook's error it spends no budget and the batch stays queued; Key names the
// configuration key to fix in logs and status.
type ConfigError struct {
	Key string // the configuration key at fault
	Err error
}

// Error names the key.
func (e *ConfigError) Error() string { return fmt.Sprintf("uploader: %s: %v", e.Key, e.Err) }

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }
