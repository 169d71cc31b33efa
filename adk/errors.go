package adk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/azerror"
	"github.com/brainwire/brainwire/internal/retryafter"
	"github.com/brainwire/brainwire/internal/textcut"
)

// maxErrorBody bounds how much of an unexpected answer is read.
const maxErrorBody = 64 << 10

// maxErrorText bounds the server's own message kept from an error body or
// frame.
const maxErrorText = agenterr.MaxText

// APIError is a non-2xx answer of the API server, as every provider
// reports one: Message holds the server's own words, Body an answer that
// held none. It carries the brainwire code EUpstream (EBusy for 429):
// errors.As(err, new(*brainwire.Error)) succeeds on it.
type APIError = agenterr.APIError

// readAPIError builds the APIError of a non-2xx response. The Python API
// server (FastAPI) answers {"detail": "<message>"}, or for a body that
// fails validation (422) {"detail": [{"loc": [...], "msg": "...", ...}]};
// the TypeScript one {"error": "<message>"}; a gateway in front may answer
// a JSON error of its own ({"error": {"message": ...}}). Those are the
// service's words. Anything else (a proxy's page) is kept as Body, for the
// log only.
func readAPIError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Service: "adk", StatusCode: resp.StatusCode, Message: detailText(raw)}
	if e.Message == "" {
		e.Body = agenterr.BodyText(raw)
	}
	e.RetryAfter, _ = retryafter.Parse(resp.Header, time.Now())
	return e
}

// detailText is the message of an error body, or "" when it holds none.
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
	return textcut.Ellipsis(azerror.Read(bytes.NewReader(raw)).Message, maxErrorText)
}

// upstreamError marks a failure of the agent server with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error
