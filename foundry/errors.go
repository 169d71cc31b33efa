package foundry

import (
	"net/http"

	"github.com/brainwire/brainwire/internal/agenterr"
)

// APIError is a non-2xx answer of the service. It carries the brainwire
// code EUpstream: errors.As(err, new(*brainwire.Error)) succeeds on it.
type APIError = agenterr.APIError

// upstreamError marks a failure of the agent service with the brainwire
// code EUpstream and a message fit for people, keeping the cause.
type upstreamError = agenterr.Error

func readAPIError(resp *http.Response) *APIError { return agenterr.ReadAPIError("foundry", resp) }
