package brainwire

import (
	"errors"
	"fmt"
	"time"
)

// Application error codes. The HTTP layer maps them to statuses in one place.
const (
	EInvalid      = "invalid"       // the request is malformed or fails validation
	ENotFound     = "not_found"     // the document does not exist (for this user), or the agent service has no such agent
	EConflict     = "conflict"      // the document is in a state that forbids the operation
	EUnauthorized = "unauthorized"  // missing or wrong credentials
	ETooLarge     = "too_large"     // the request body or upload is over its limit
	EUpstream     = "upstream"      // the agent service failed or answered badly
	EUpstreamAuth = "upstream_auth" // brainwire's own credential for the agent service is missing or refused
	EUnavailable  = "unavailable"   // a backend is not configured or not reachable
	EBusy         = "busy"          // a service asked brainwire to come back later (429), its retries spent
	EInternal     = "internal"      // anything else
)

// Error is an application error: a code for programs and a message for people.
type Error struct {
	Code    string
	Message string
	// RetryAfter is how long the service asked callers to wait (EBusy),
	// when it said.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("brainwire: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of the first *Error in err's chain, or a
// generic message that leaks no internals.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// Failure is a capture's failure as its client is told of it, whole: a
// code of the closed set every protocol sends (adapter.ErrorCode) and a
// message for people, the cause kept for the log. The adapter words the
// agent service's failures itself; a Failure is one of something else the
// capture needs (its audio's transcription, its Idempotency-Key).
type Failure struct {
	Code    string
	Message string
	// RetryAfter is how long the service asked callers to wait (EBusy),
	// when it said.
	RetryAfter time.Duration
	Err        error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Message
	}
	return f.Message + ": " + f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }
