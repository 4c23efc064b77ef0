package budget

import "errors"

// ErrSpent is returned (wrapped in a *SpentError) when a budget has no wait left to give.
var ErrSpent = errors.New("retry budget spent")

// ErrWoken is returned by Sleep when its wake channel fired before the wait ended.
var ErrWoken = errors.New("wait woken early")

// ErrBeyondDeadline is returned by Sleep, together with context.DeadlineExceeded, when a wait
// would end after the context's deadline and so is not started.
var ErrBeyondDeadline = errors.New("wait would end after the context deadline")
