package transcription

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/azerror"
	"github.com/brainwire/brainwire/internal/retryafter"
	"github.com/brainwire/brainwire/internal/textcut"
)

// APIError is a non-2xx answer of the transcription service. It unwraps to
// a *brainwire.Error: EInvalid when the service refused the audio itself,
// EUpstreamAuth when it refused brainwire's credential (401, 403), EBusy
// when it asked to be called later (429), EUpstream for everything else
// (outages, a deployment that cannot transcribe), with a message fit
// for people: the service's own words only when it answered its JSON
// error, never a proxy's page.
type APIError struct {
	StatusCode int
	Code       string // the service's error.code, when it gave one
	Type       string // the service's error.type, when it gave one
	Message    string // the service's error.message, or the start of the body
	// JSON says whether Message is the service's own, from its JSON
	// error, rather than a proxy's text or page.
	JSON bool
	// RetryAfter is how long the service asked callers to wait (429, 503);
	// zero when it did not say.
	RetryAfter time.Duration
	RequestID  string // apim-request-id, for support requests
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("transcription: service answered %d", e.StatusCode)
	if e.Code != "" && e.Code != strconv.Itoa(e.StatusCode) {
		s += " " + e.Code
	}
	return s + ": " + e.Message
}

// Unwrap returns the application error for the answer.
func (e *APIError) Unwrap() error {
	said := e.said()
	switch {
	case e.AudioRejected():
		return brainwire.Errorf(brainwire.EInvalid, "the transcription service could not use the audio: %s", said)
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return brainwire.Errorf(brainwire.EUpstreamAuth, "brainwire could not sign in to the transcription service")
	case e.StatusCode == http.StatusTooManyRequests:
		return &brainwire.Error{Code: brainwire.EBusy, Message: "the transcription service is busy", RetryAfter: e.RetryAfter}
	}
	return brainwire.Errorf(brainwire.EUpstream, "the transcription service failed: %s", said)
}

// said is what the service said, as far as people may read it: its own
// message, else its status.
func (e *APIError) said() string {
	if e.JSON && e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("it answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// AudioRejected reports whether the service refused the audio itself — a
// corrupt, undecodable or unsupported file — rather than the request's
// credentials or configuration, or failed on its own.
func (e *APIError) AudioRejected() bool {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		// Everything else in the request is fixed by the configuration, so
		// a bad request is about the audio unless it names the deployment.
		return e.Code != "OperationNotSupported"
	case http.StatusFailedDependency:
		// Azure reports the model's refusal of an unrecognized file format
		// as 424 model_error.
		return true
	}
	return false
}

// newAPIError reads a non-2xx answer. Azure OpenAI answers
// {"error":{"code","message","type","param"}}; its gateway sometimes
// {"statusCode","message"}; proxies plain text or HTML.
func newAPIError(resp *http.Response) *APIError {
	a := azerror.Read(resp.Body)
	e := &APIError{
		StatusCode: resp.StatusCode,
		Code:       a.Code,
		Type:       a.Type,
		Message:    a.Message,
		JSON:       a.JSON && a.Message != "",
		RetryAfter: retryAfter(resp.Header),
		RequestID:  resp.Header.Get("apim-request-id"),
	}
	if !a.JSON {
		// A proxy's text or HTML page: its words, on one line.
		e.Message = strings.Join(strings.Fields(string(a.Raw)), " ")
	}
	e.Message = textcut.Ellipsis(e.Message, 300)
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryAfter is the wait the answer asks for, zero when it asks none.
func retryAfter(h http.Header) time.Duration {
	d, _ := retryafter.Parse(h, time.Now())
	return d
}
