package foundry

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/textcut"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// maxErrorText bounds the raw body kept as a message when it is not JSON.
const maxErrorText = 512

// APIError is a non-2xx answer of the service. It carries the brainwire
// code EUpstream: errors.As(err, new(*brainwire.Error)) succeeds on it.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	Type       string
	Param      string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("foundry: ")
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

// readAPIError builds the APIError of a non-2xx response from its
// {"error":{"message","type","param","code"}} body, falling back to the raw
// body.
func readAPIError(resp *http.Response) *APIError {
	e := &APIError{StatusCode: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var payload struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &payload) == nil {
		var inner struct {
			Message, Type, Param, Code json.RawMessage
		}
		if json.Unmarshal(payload.Error, &inner) == nil {
			e.Message, e.Type, e.Param, e.Code = text(inner.Message), text(inner.Type), text(inner.Param), text(inner.Code)
		} else if s := text(payload.Error); s != "" {
			e.Message = s
		}
		if e.Message == "" {
			e.Message = text(payload.Message)
		}
	}
	if e.Message == "" && e.Code == "" {
		e.Message = bodyText(body)
	}
	return e
}

// text reads a JSON string, or the literal text of a number; null and
// anything else read as "".
func text(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// bodyText is the start of a body that is not the expected JSON, as a
// message.
func bodyText(b []byte) string {
	return textcut.Ellipsis(strings.TrimSpace(string(b)), maxErrorText)
}

// upstreamError marks a failure of the agent service (a broken or
// malformed stream, a run that cannot go on) with the brainwire code
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
