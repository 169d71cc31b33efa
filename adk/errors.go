package adk

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/textcut"
)

// maxErrorBody bounds how much of an unexpected answer is read.
const maxErrorBody = 64 << 10

// maxErrorText bounds the text kept from a body or frame that is not the
// expected JSON.
const maxErrorText = agenterr.MaxText

// APIError is a non-2xx answer of the API server. FastAPI answers
// {"detail": "<message>"}, or for a body that fails validation (422)
// {"detail": [{"loc": [...], "msg": "...", ...}]}. It carries the
// brainwire code EUpstream: errors.As(err, new(*brainwire.Error))
// succeeds on it.
type APIError struct {
	StatusCode int
	// Detail is the server's message (validation errors joined), or the
	// start of a body that was not FastAPI's JSON (a proxy's page).
	Detail string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("adk: ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// As lets the error be read as a *brainwire.Error with code EUpstream.
func (e *APIError) As(target any) bool {
	t, ok := target.(**brainwire.Error)
	if !ok {
		return false
	}
	msg := e.Detail
	if msg == "" {
		msg = fmt.Sprintf("the agent server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	*t = &brainwire.Error{Code: brainwire.EUpstream, Message: msg}
	return true
}

// readAPIError builds the APIError of a non-2xx response.
func readAPIError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &APIError{StatusCode: resp.StatusCode, Detail: detailText(raw)}
}

func detailText(raw []byte) string {
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Detail) > 0 {
		var s string
		if json.Unmarshal(body.Detail, &s) == nil {
			return textcut.Ellipsis(s, maxErrorText)
		}
		var list []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		}
		if json.Unmarshal(body.Detail, &list) == nil && len(list) > 0 {
			msgs := make([]string, 0, len(list))
			for _, v := range list {
				loc := make([]string, len(v.Loc))
				for i, l := range v.Loc {
					loc[i] = fmt.Sprint(l)
				}
				msgs = append(msgs, strings.Join(loc, ".")+": "+v.Msg)
			}
			return textcut.Ellipsis(strings.Join(msgs, "; "), maxErrorText)
		}
	}
	return bodyText(raw)
}

// bodyText is the start of a body that is not the expected JSON.
var bodyText = agenterr.BodyText

// upstreamError marks a failure of the agent server with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error
