package responses

import (
	"net/http"

	"github.com/brainwire/brainwire/internal/agenthttp"
)

// NewAPIKeyTransport returns a transport sending key with every request:
// as "Authorization: Bearer <key>", which OpenAI and Azure OpenAI's v1 API
// both accept, or, when header is set ("api-key" for an Azure gateway that
// wants it), as that header. next nil means http.DefaultTransport.
func NewAPIKeyTransport(key, header string, next http.RoundTripper) http.RoundTripper {
	if header == "" {
		return agenthttp.NewHeaderTransport("Authorization", "Bearer "+key, next)
	}
	return agenthttp.NewHeaderTransport(header, key, next)
}
