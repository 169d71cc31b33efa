// Package agenterr is how the agent providers (foundry, responses, adk)
// report the agent service's failures: as errors that read as a
// *brainwire.Error with code EUpstream (EUpstreamAuth when brainwire could
// not sign in) and a message fit for people, keeping the cause in the
// chain.
package agenterr

import (
	"cmp"
	"encoding/json"
	"errors"
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

// MaxText bounds the service's own message kept from its JSON error.
const MaxText = 512

// MaxBody bounds the text kept from an answer that held no message of the
// service's (a gateway's page, plain text), for the log and telemetry.
const MaxBody = 4 << 10

// Error is a failure of the agent service (a broken or malformed stream,
// a run that cannot go on): Msg is for people, Err the cause.
type Error struct {
	Msg string
	Err error
	// Code is the brainwire code it reads as; EUpstream when empty.
	Code string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// As lets the error be read as a *brainwire.Error with its code.
func (e *Error) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if ok {
		code := e.Code
		if code == "" {
			code = brainwire.EUpstream
		}
		*t = &brainwire.Error{Code: code, Message: e.Msg}
	}
	return ok
}

// StreamFailed is err, the failure of reading what ("events of run
// run_1") from a stream, as the decoder told it, or else as a stream that
// broke off.
func StreamFailed(what string, err error) error {
	err = fmt.Errorf("reading %s: %w", what, err)
	if errors.As(err, new(*Error)) {
		return err
	}
	return &Error{Msg: "the agent service's event stream broke off", Err: err}
}

// ErrorEvent reads the payload of an event stream's error event, which
// has no one schema: {"code","message"}, or under "error" an object with
// them or a string; codes may be numbers. Those are the service's words.
// Anything else (a gateway's page, plain text, JSON with neither) is no
// message for people: err says so, and keeps the payload for the log and
// telemetry.
func ErrorEvent(data []byte) (code, message string, err error) {
	var v struct {
		Code, Message, Error json.RawMessage
	}
	if json.Unmarshal(data, &v) == nil {
		code, message = azerror.Text(v.Code), azerror.Text(v.Message)
		var inner struct{ Code, Message json.RawMessage }
		if json.Unmarshal(v.Error, &inner) == nil {
			code, message = cmp.Or(azerror.Text(inner.Code), code), cmp.Or(azerror.Text(inner.Message), message)
		} else {
			message = cmp.Or(azerror.Text(v.Error), message)
		}
		if code != "" || message != "" {
			return code, message, nil
		}
	}
	return "", "", &Error{Msg: "the agent service reported an error brainwire cannot read",
		Err: fmt.Errorf("error event: %s", BodyText(data))}
}

// SignInMessage is what people are told when brainwire could not sign in
// to the agent service.
const SignInMessage = "brainwire could not sign in to the agent service"

// SignIn returns the failure to get a credential for the agent service
// (a token source that failed): it reads as EUpstreamAuth, not as an
// unreachable service, keeping err as the cause.
func SignIn(err error) error {
	return &Error{Code: brainwire.EUpstreamAuth, Msg: SignInMessage, Err: fmt.Errorf("signing in to the agent service: %w", err)}
}

// NotFound returns err read as ENotFound with msg when it is the
// service's 404 answer (an unknown agent, deployment or model), else err
// as it is. Only calls that name what brainwire was configured with use
// it: a 404 while a capture runs stays an upstream failure.
func NotFound(err error, msg string) error {
	var a *APIError
	if errors.As(err, &a) && a.StatusCode == http.StatusNotFound {
		return &Error{Code: brainwire.ENotFound, Msg: msg, Err: err}
	}
	return err
}

// APIError is a non-2xx answer of an agent service: an Azure or OpenAI
// service, whose bodies are {"error":{"message","type","param","code"}}
// (ReadAPIError), or an ADK API server, whose detail is the Message. It
// carries the brainwire code EUpstream (EUpstreamAuth for 401 and 403,
// EBusy for 429):
// errors.As(err, new(*brainwire.Error)) succeeds on it, with the service's
// own message, or only the status when it gave none.
type APIError struct {
	// Service names the client in Error ("foundry", "responses", "adk").
	Service    string
	StatusCode int
	Code       string
	// Message is the service's own words, from its JSON error; "" when
	// the answer held none.
	Message string
	Type    string
	Param   string
	// Body is the start of an answer that held no message of the
	// service's (a gateway's HTML page, plain text), at most MaxBody
	// bytes. It is in Error, for the log and telemetry, and never in what
	// people are told: a gateway's page may name internal hosts and
	// addresses.
	Body string
	// RetryAfter is how long the service asked callers to wait, when it
	// said (retry-after-ms, Retry-After).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Service + ": ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Body != "":
		b.WriteString(": " + e.Body)
	}
	return b.String()
}

// BusyMessage is what people are told when the agent service asked
// brainwire to come back later and brainwire's retries are spent.
const BusyMessage = "The agent service is busy; try again later"

// As lets the error be read as a *brainwire.Error: EUpstreamAuth when the
// service refused brainwire's credential (401, 403), EBusy when it asked
// to be called later (429), with how long it asked for, else EUpstream.
func (e *APIError) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if !ok {
		return false
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		*t = &brainwire.Error{Code: brainwire.EUpstreamAuth, Message: SignInMessage}
		return true
	case http.StatusTooManyRequests:
		*t = &brainwire.Error{Code: brainwire.EBusy, Message: BusyMessage, RetryAfter: e.RetryAfter}
		return true
	}
	msg := e.Message
	if msg == "" {
		msg = strings.TrimSpace(fmt.Sprintf("it answered %d %s", e.StatusCode, http.StatusText(e.StatusCode)))
	}
	*t = &brainwire.Error{Code: brainwire.EUpstream, Message: msg}
	return true
}

// ReadAPIError builds the APIError of service's non-2xx response from its
// body: the message of its JSON error, or else the body itself as Body.
func ReadAPIError(service string, resp *http.Response) *APIError {
	a := azerror.Read(resp.Body)
	e := &APIError{Service: service, StatusCode: resp.StatusCode, Message: textcut.Ellipsis(a.Message, MaxText),
		Type: a.Type, Param: a.Param, Code: a.Code}
	if e.Message == "" {
		e.Body = BodyText(a.Raw)
	}
	e.RetryAfter, _ = retryafter.Parse(resp.Header, time.Now())
	return e
}

// BodyText is the start of a body or event that is not the service's JSON
// error, for the log and telemetry: at most MaxBody bytes, valid UTF-8.
func BodyText(b []byte) string {
	return textcut.Ellipsis(strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD"), MaxBody)
}
