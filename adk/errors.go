package adk

import (
	"net/http"

	"github.com/brainwire/brainwire/internal/agenterr"
)

// maxErrorText bounds the server's own message kept from an error frame.
const maxErrorText = agenterr.MaxText

// APIError is a non-2xx answer of the API server, as every provider
// reports one: Message holds the server's own words (FastAPI's detail, or
// a gateway's JSON error), Body an answer that held none. It carries the
// brainwire code EUpstream (EBusy for 429): errors.As(err,
// new(*brainwire.Error)) succeeds on it.
type APIError = agenterr.APIError

// upstreamError marks a failure of the agent server with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error

func readAPIError(resp *http.Response) *APIError { return agenterr.ReadAPIError("adk", resp) }
