package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/capture"
)

// statusFor maps application error codes to HTTP statuses, in one place.
func statusFor(code string) int {
	switch code {
	case brainwire.EInvalid:
		return http.StatusBadRequest
	case brainwire.EUnauthorized:
		return http.StatusUnauthorized
	case brainwire.ENotFound:
		return http.StatusNotFound
	case brainwire.EConflict:
		return http.StatusConflict
	case brainwire.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case brainwire.EUpstream, brainwire.EUpstreamAuth:
		return http.StatusBadGateway
	case brainwire.EUnavailable, errTooBusy:
		return http.StatusServiceUnavailable
	case errUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case errRequestTimeout:
		return http.StatusRequestTimeout
	case capture.EKeyReused:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// Transport-level codes only the HTTP layer uses.
const (
	errUnsupportedMedia = "unsupported_media_type"
	errRequestTimeout   = "request_timeout" // the body did not arrive in time
	errTooBusy          = "too_busy"        // a bound on concurrent work is reached
)

// bodyError describes a failure to read the request body without the
// connection's details (addresses are nobody's business but the logs'):
// a body over its limit is a 413, one that stalls past the server's read
// deadline a 408.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return brainwire.Errorf(brainwire.ETooLarge, "request body is over %d bytes", tooBig.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &brainwire.Error{Code: errRequestTimeout, Message: "the request body did not arrive in time"}
	}
	return brainwire.Errorf(brainwire.EInvalid, "the request body could not be read")
}

// writeError answers err as JSON {"detail": "..."}; only used before a
// stream has started.
func writeError(w http.ResponseWriter, err error) {
	noteCause(w, err)
	writeJSON(w, statusFor(brainwire.ErrorCode(err)), map[string]string{"detail": brainwire.ErrorMessage(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
