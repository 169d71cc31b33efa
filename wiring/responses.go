package wiring

import (
	"fmt"
	"net/http"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/responses"
)

// Responses returns the Agent of a Responses API endpoint (or of the
// simulator's Responses face, or of a replay of either): agent, run as
// opts say, at baseURL ({project}/openai/v1 for a Foundry project, whose
// endpoint project is then; "" for other endpoints), with auth above the
// transport (nil: no authorization).
func Responses(baseURL, project string, agent responses.Agent, auth func(http.RoundTripper) http.RoundTripper, opts ...responses.ProviderOption) func(http.RoundTripper) (brainwire.Provider, error) {
	return func(rt http.RoundTripper) (brainwire.Provider, error) {
		if auth != nil {
			rt = auth(rt)
		}
		var clientOpts []responses.ClientOption
		if project != "" {
			clientOpts = append(clientOpts, responses.WithProject(project))
		}
		client, err := responses.NewClient(baseURL, &http.Client{Transport: rt}, clientOpts...)
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		p, err := responses.NewProvider(client, agent, opts...)
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		return p, nil
	}
}
