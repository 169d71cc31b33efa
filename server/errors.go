package server

import (
	"encoding/json"
	"net/http"

	"github.com/brainwire/brainwire"
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
	case brainwire.EUpstream:
		return http.StatusBadGateway
	case brainwire.EUnavailable:
		return http.StatusServiceUnavailable
	case errUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	}
	return http.StatusInternalServerError
}

// writeError answers err as JSON {"detail": "..."}; only used before a
// stream has started.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, statusFor(brainwire.ErrorCode(err)), map[string]string{"detail": brainwire.ErrorMessage(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
