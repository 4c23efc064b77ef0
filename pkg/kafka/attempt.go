package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// attemptState collects what happens to one Send's records. kgo calls the promise from its
// own goroutine, possibly after Send returned (an abandoned attempt): nothing here is read
// then.
type attemptState struct {
	left atomic.Int64
	done chan struct{} // closed when every record has its answer

	written   atomic.Bool // a produce request was written to a broker during the attempt
	authOnce  sync.Once
	authFail  chan struct{} // closed when a connection failed SASL authentication
	authErr   error         // that failure; read after authFail is closed
	throttled atomic.Int64  // the longest throttle the cluster asked for during it, ns

	mu     sync.Mutex
	failed int   // records that failed
	first  error // the first failure of the most severe kind
	worst  int   // its severity
}

func newAttempt(n int) *attemptState {
	st := &attemptState{done: make(chan struct{}), authFail: make(chan struct{})}
	st.left.Store(int64(n))
	return st
}

func (st *attemptState) promise(_ *kgo.Record, err error) {
	if err != nil {
		sev := severity(err)
		st.mu.Lock()
		st.failed++
		if st.first == nil || sev > st.worst {
			st.first, st.worst = err, sev
		}
		st.mu.Unlock()
	}
	if st.left.Add(-1) == 0 {
		close(st.done)
	}
}

// Severities of a record failure: when records of one batch fail differently, the batch takes
// the outcome of the most severe, the one that decides what to do with it.
const (
	sevRetryable = iota + 1 // the budgets decide
	sevRejected             // no retry helps: dead letter
	sevTooLarge             // splitting helps
	sevAuth                 // the cluster refused our credentials or did not authorize them
)

func severity(err error) int {
	switch {
	case isAuthError(err), isAuthorizationError(err):
		return sevAuth
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return sevTooLarge
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		return sevRejected
	}
	return sevRetryable
}

// isAuthError reports a SASL failure: the cluster refused our credentials or mechanism.
func isAuthError(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState)
}

// isAuthorizationError reports that the cluster does not let our principal produce (its
// ACLs): as a 403, a statement about our credentials, not about the records.
func isAuthorizationError(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// throttle records that the cluster asked us to wait interval, keeping the longest.
func (st *attemptState) throttle(interval time.Duration) {
	for {
		cur := st.throttled.Load()
		if int64(interval) <= cur || st.throttled.CompareAndSwap(cur, int64(interval)) {
			return
		}
	}
}

// refused records a SASL failure of a connection: kgo would keep dialing until the attempt's
// deadline, but no retry of the same credentials can succeed, so the attempt ends now.
func (st *attemptState) refused(err error) {
	st.authOnce.Do(func() {
		st.authErr = err
		close(st.authFail)
	})
}

// authOutcome is the outcome of an attempt whose credentials the cluster refused (SASL) or
// did not authorize (ACLs): ClassAuthRefused, as the HTTP destination's 401 and 403, so the
// uploader pauses delivery with the batch queued and probes until the cluster lets us in
// (upload.on_auth_failure). The *delivery.ConfigError names the key to fix.
func authOutcome(err error, written bool) delivery.Outcome {
	code := kerrName(err)
	if code == "" {
		code = "sasl_refused" // the broker hung up instead of answering with an error code
	}
	why := fmt.Errorf("the cluster refused our SASL credentials (%w); check upload.kafka.sasl.mechanism, username and password", err)
	if isAuthorizationError(err) {
		why = fmt.Errorf("the cluster does not authorize our principal to produce (%w); grant it the ACL or fix upload.kafka.sasl", err)
	}
	return delivery.Outcome{
		Class: delivery.ClassAuthRefused, Code: code, Written: written,
		Err:    &delivery.ConfigError{Key: "upload.kafka.sasl", Err: why},
		Detail: []byte(why.Error()),
	}
}

// SuccessCode is the result code of a batch every record of which the cluster acknowledged:
// the label of a Kafka success in metrics (outbox_upload_requests_total's code), logs and
// status, as "200" is the HTTP destination's.
const SuccessCode = "ok"

// outcome classifies an attempt every record of which has its answer.
func (st *attemptState) outcome() delivery.Outcome {
	st.mu.Lock()
	err, failed := st.first, st.failed
	st.mu.Unlock()
	o := delivery.Outcome{Written: st.written.Load(), BackPressure: st.throttled.Load() > 0}
	if err == nil {
		// A throttled produce that succeeded is a success with back-pressure: the cluster
		// delayed its answer by its quota, so fewer batches in flight are worth as much.
		o.Class, o.Code = delivery.ClassSuccess, SuccessCode
		return o
	}
	o.Err = err
	switch st.worst {
	case sevAuth:
		return authOutcome(err, o.Written)
	case sevTooLarge:
		o.Class, o.Code = delivery.ClassTooLarge, kerrName(err)
	case sevRejected:
		o.Class, o.Code = delivery.ClassRejected, kerrName(err)
	default:
		o = st.retryable(o, err)
	}
	o.Detail = fmt.Appendf(nil, "%d records failed: %v", failed, err)
	return o
}

// retryable classifies a transient failure: a retriable Kafka error by its name, a network
// error by whether it can have reached a broker; throttling turns either into a wait of the
// time the cluster asked for. Throttling, a quota and a timeout are back-pressure.
func (st *attemptState) retryable(o delivery.Outcome, err error) delivery.Outcome {
	o.Class = delivery.ClassRetryable
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		o.Code = ke.Message
		o.BackPressure = o.BackPressure || errors.Is(err, kerr.RequestTimedOut) || errors.Is(err, kerr.ThrottlingQuotaExceeded)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		// Not our context, which is live: records of an abandoned attempt, batched with ours
		// by kgo, took ours down with them, or kgo gave up on them.
		o.NetError = st.netClass()
		o.BackPressure = o.BackPressure || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrRecordTimeout)
	default:
		o.NetError = netClass(err, st.written.Load())
	}
	if t := time.Duration(st.throttled.Load()); t > 0 {
		o.Class, o.RetryAfter = delivery.ClassRateLimited, t
	}
	return o
}

// cutShort is the outcome of an attempt whose context ended before every record was
// answered: Close's deadline (canceled: aborted, the worker stops) or upload.timeout (no
// answer in time: a network timeout, or a wait on the cluster's throttle).
func cutShort(ctx context.Context, st *attemptState) delivery.Outcome {
	o := delivery.Outcome{Written: st.written.Load()}
	left := st.left.Load()
	if errors.Is(ctx.Err(), context.Canceled) {
		o.Class, o.Err = delivery.ClassAborted, ctx.Err()
		return o
	}
	o.Class, o.NetError, o.BackPressure = delivery.ClassRetryable, st.netClass(), true
	o.Err = fmt.Errorf("kafka: %d records not acknowledged within the attempt's timeout: %w", left, ctx.Err())
	if t := time.Duration(st.throttled.Load()); t > 0 {
		o.Class, o.RetryAfter = delivery.ClassRateLimited, t
	}
	o.Detail = []byte(o.Err.Error())
	return o
}

// netClass says whether any produce request of the attempt reached a broker.
func (st *attemptState) netClass() delivery.NetErrorClass {
	if st.written.Load() {
		return delivery.MaybeSent
	}
	return delivery.NeverSent
}

// netClass classifies a network error: a dial that failed (refused, unreachable, DNS) cannot
// have delivered anything, nor can any error when no produce request was written.
func netClass(err error, written bool) delivery.NetErrorClass {
	var op *net.OpError
	if !written || (errors.As(err, &op) && op.Op == "dial") {
		return delivery.NeverSent
	}
	return delivery.NetworkErrorClass(err)
}

// kerrName is the Kafka name of err (MESSAGE_TOO_LARGE), or "" when it is not a Kafka error.
func kerrName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return ""
}

// hooks feeds the attempt in progress from kgo's broker hooks.
type hooks struct{ d *Destination }

var (
	_ kgo.HookBrokerWrite    = hooks{}
	_ kgo.HookBrokerThrottle = hooks{}
	_ kgo.HookBrokerConnect  = hooks{}
	_ kgo.HookBrokerRead     = hooks{}
)

// errSASLClosed is the failure of a connection the broker closed in the middle of SASL
// authentication, which is how some brokers answer wrong credentials.
var errSASLClosed = errors.New("the broker closed the connection during SASL authentication")

// OnBrokerRead ends the attempt when the broker hung up on our SASL authentication. Should
// that be a broker restart rather than a refusal, the cost is small: an aborted attempt
// spends no budget and the batch is tried again after batch.interval.
func (h hooks) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil || (key != int16(kmsg.SASLAuthenticate) && key != int16(kmsg.SASLHandshake)) {
		return
	}
	h.d.refused(fmt.Errorf("%w: %w", errSASLClosed, err))
}

// OnBrokerConnect ends the attempt when the cluster refused our SASL credentials, and
// forgets a refusal once a connection gets through.
func (h hooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	switch {
	case err == nil:
		h.d.authErr.Store(nil)
	case isAuthError(err):
		h.d.refused(err)
	}
}

// OnBrokerWrite marks the attempt as written once a produce request (or part of one) went out.
func (h hooks) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, bytesWritten int, _, _ time.Duration, _ error) {
	if key != int16(kmsg.Produce) || bytesWritten == 0 {
		return
	}
	h.d.live.each(func(st *attemptState) { st.written.Store(true) })
}

// OnBrokerThrottle records how long the cluster asked us to wait.
func (h hooks) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	h.d.live.each(func(st *attemptState) { st.throttle(interval) })
}

// kgoLogger passes kgo's warnings and errors to the destination's logger, at debug: the
// outcome of each attempt is what the worker logs; kgo's own lines are detail.
type kgoLogger struct {
	log interface{ Debug(string, ...any) }
}

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l.log.Debug("kgo: "+msg, append(keyvals, "kgo_level", level.String())...)
}
