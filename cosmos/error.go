package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/brainwire/brainwire"
)

// opError is a failed Cosmos DB operation: what was being done, the
// application error the caller acts on, and the service's error for logs.
type opError struct {
	doing string
	app   *brainwire.Error
	cause error
}

func (e *opError) Error() string {
	var re *azcore.ResponseError
	if errors.As(e.cause, &re) {
		// The full ResponseError spans many lines; status and code suffice.
		return fmt.Sprintf("cosmos: %s: %d %s", e.doing, re.StatusCode, re.ErrorCode)
	}
	return fmt.Sprintf("cosmos: %s: %v", e.doing, e.cause)
}

// Unwrap exposes both the application error (for brainwire.ErrorCode) and
// the underlying error (for errors.Is/As on azcore or context errors).
func (e *opError) Unwrap() []error { return []error{e.app, e.cause} }

// opErr classifies err, returned by the service while doing something to
// subject (a phrase for people, e.g. "inbox item"), into an application
// error.
func opErr(doing, subject string, err error) error {
	if err == nil {
		return nil
	}
	var app *brainwire.Error
	switch status := statusOf(err); {
	case status == http.StatusNotFound:
		app = brainwire.Errorf(brainwire.ENotFound, "%s not found", subject)
	case status == http.StatusConflict:
		app = brainwire.Errorf(brainwire.EConflict, "%s already exists", subject)
	case status == http.StatusPreconditionFailed:
		app = brainwire.Errorf(brainwire.EConflict, "%s was changed by another request; try again", subject)
	case status == http.StatusRequestEntityTooLarge:
		app = brainwire.Errorf(brainwire.ETooLarge, "%s is too large to store", subject)
	case status == http.StatusBadRequest:
		app = brainwire.Errorf(brainwire.EInvalid, "%s was rejected by the store as malformed", subject)
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusTooManyRequests, status >= 500,
		status == 0 && !errors.Is(err, context.Canceled):
		// Status 0: no answer at all (network, DNS, deadline).
		app = brainwire.Errorf(brainwire.EUnavailable, "the store is unavailable")
	default:
		app = brainwire.Errorf(brainwire.EInternal, "internal error")
	}
	return &opError{doing: doing, app: app, cause: err}
}

// statusOf returns the HTTP status of a service error, or 0 if err carries
// none.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}
