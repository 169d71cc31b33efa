// Package agenterr is how the agent providers (foundry, responses, adk)
// report the agent service's failures: as errors that read as a
// *brainwire.Error with code EUpstream (EUpstreamAuth when brainwire could
// not sign in) and a message fit for people, keeping the cause in the
// chain.
package agenterr

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/azerror"
	"github.com/brainwire/brainwire/internal/textcut"
)

// MaxText bounds the text kept from a body that is not the expected JSON.
const MaxText = 512

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
// carries the brainwire code EUpstream (EUpstreamAuth for 401 and 403):
// errors.As(err, new(*brainwire.Error)) succeeds on it.
type APIError struct {
	// Service names the client in Error ("foundry", "responses", "adk").
	Service    string
	StatusCode int
	Code       string
	Message    string
	Type       string
	Param      string
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
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// As lets the error be read as a *brainwire.Error: EUpstreamAuth when the
// service refused brainwire's credential (401, 403), else EUpstream.
func (e *APIError) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if !ok {
		return false
	}
	if e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden {
		*t = &brainwire.Error{Code: brainwire.EUpstreamAuth, Message: SignInMessage}
		return true
	}
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("the agent service answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	*t = &brainwire.Error{Code: brainwire.EUpstream, Message: msg}
	return true
}

// ReadAPIError builds the APIError of service's non-2xx response from its
// body, falling back to the raw body.
func ReadAPIError(service string, resp *http.Response) *APIError {
	a := azerror.Read(resp.Body)
	e := &APIError{Service: service, StatusCode: resp.StatusCode, Message: a.Message, Type: a.Type, Param: a.Param, Code: a.Code}
	if e.Message == "" && e.Code == "" {
		e.Message = BodyText(a.Raw)
	}
	return e
}

// BodyText is the start of a body that is not the expected JSON, as a
// message.
func BodyText(b []byte) string {
	return textcut.Ellipsis(strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD"), MaxText)
}
