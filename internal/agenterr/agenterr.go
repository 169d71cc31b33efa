// Package agenterr is how the agent providers (foundry, responses, adk)
// report the agent service's failures: as errors that read as a
// *brainwire.Error with code EUpstream and a message fit for people,
// keeping the cause in the chain.
package agenterr

import (
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
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// As lets the error be read as a *brainwire.Error with code EUpstream.
func (e *Error) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if ok {
		*t = &brainwire.Error{Code: brainwire.EUpstream, Message: e.Msg}
	}
	return ok
}

// APIError is a non-2xx answer of an agent service: an Azure or OpenAI
// service, whose bodies are {"error":{"message","type","param","code"}}
// (ReadAPIError), or an ADK API server, whose detail is the Message. It
// carries the brainwire code EUpstream: errors.As(err, new(*brainwire.Error))
// succeeds on it.
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

// As lets the error be read as a *brainwire.Error with code EUpstream.
func (e *APIError) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if !ok {
		return false
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
