package responses

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/azerror"
	"github.com/brainwire/brainwire/internal/textcut"
)

// maxErrorBody bounds how much of an unexpected answer is read.
const maxErrorBody = azerror.MaxBody

// maxErrorText bounds the raw body kept as a message when it is not JSON.
const maxErrorText = 512

// APIError is a non-2xx answer of the service: OpenAI's, Azure OpenAI's
// and Foundry's bodies all have {"error":{"message","type","param","code"}}.
// It carries the brainwire code EUpstream: errors.As(err,
// new(*brainwire.Error)) succeeds on it.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	Type       string
	Param      string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("responses: ")
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

// readAPIError builds the APIError of a non-2xx response, falling back to
// the raw body.
func readAPIError(resp *http.Response) *APIError {
	a := azerror.Read(resp.Body)
	e := &APIError{StatusCode: resp.StatusCode, Message: a.Message, Type: a.Type, Param: a.Param, Code: a.Code}
	if e.Message == "" && e.Code == "" {
		e.Message = bodyText(a.Raw)
	}
	return e
}

// bodyText is the start of a body that is not the expected JSON, as a
// message.
func bodyText(b []byte) string {
	return textcut.Ellipsis(strings.TrimSpace(string(b)), maxErrorText)
}

// upstreamError marks a failure of the agent service (a broken or
// malformed stream, a response that cannot go on) with the brainwire code
// EUpstream and a message fit for people, keeping the cause in the chain.
type upstreamError struct {
	msg string
	err error
}

func (e *upstreamError) Error() string { return e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

func (e *upstreamError) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if ok {
		*t = &brainwire.Error{Code: brainwire.EUpstream, Message: e.msg}
	}
	return ok
}
