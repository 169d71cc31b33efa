package app

import (
	"fmt"
	"net/http"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/responses"
)

// Responses returns the Agent of a Responses API endpoint (or of the
// simulator's Responses face, or of a replay of either): the agent cfg
// names, at baseURL ({project}/openai/v1 for a Foundry project, whose
// endpoint project is then; "" for other endpoints), with auth above the
// transport (nil: no authorization).
func Responses(baseURL, project string, cfg responses.Config, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
	return func(rt http.RoundTripper) (brainwire.Provider, error) {
		if auth != nil {
			rt = auth(rt)
		}
		var opts []responses.ClientOption
		if project != "" {
			opts = append(opts, responses.WithProject(project))
		}
		client, err := responses.NewClient(baseURL, &http.Client{Transport: rt}, opts...)
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		p, err := responses.NewProvider(client, cfg)
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		return p, nil
	}
}
