package replay

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// responsesAPI is the Responses API: a Foundry project's, Azure OpenAI's,
// OpenAI's (and the simulator's face of it).
var responsesAPI = agentAPI{
	name: "responses",
	recorded: func(first recorder.Request) bool {
		_, ok := responsesBase(first.Path)
		return ok
	},
	agent: func(base string, fx *recorder.Fixture) func(http.RoundTripper) (brainwire.Provider, error) {
		p := responsesParams(fx)
		baseURL, project := base+p.basePath, ""
		if p.projectPath != "" {
			project = base + p.projectPath
		}
		if p.query != "" {
			baseURL += "?" + p.query
		}
		return wiring.Responses(baseURL, project, p.agent, nil,
			responses.WithName(p.name), responses.WithChaining(p.chaining), responses.WithReasoningSummary(p.summary))
	},
	telemetryAgent: func(fx *recorder.Fixture) telemetry.Agent {
		p := responsesParams(fx)
		a := telemetry.Agent{Name: AgentName, Provider: p.name}
		if ag := p.agent; ag.Name != "" {
			a.ID, a.Version = ag.Name, ag.Version
		} else {
			a.Version = instructions.New(ag.Instructions, "").Version
		}
		return a
	},
}

// responsesBase returns the base path of a Responses API operation path
// (up to and including /openai/v1 or /v1), or false for another API's.
func responsesBase(path string) (string, bool) {
	for _, marker := range []string{"/openai/v1/", "/v1/"} {
		if i := strings.Index(path, marker); i >= 0 {
			rest := path[i+len(marker):]
			if strings.HasPrefix(rest, "responses") || strings.HasPrefix(rest, "conversations") {
				return path[:i+len(marker)-1], true
			}
		}
	}
	return "", false
}

type responsesReplay struct {
	basePath    string // the base URL's path
	projectPath string // the Foundry project's path, when the base is one's
	query       string // the base URL's query
	// agent, name, chaining and summary are the provider's
	// (responses.NewProvider).
	agent    responses.Agent
	name     string
	chaining responses.Chaining
	summary  string
}

// responsesParams reads from the recorded requests what the provider must
// be configured with to make them again: where the API is, how the agent
// is named, how responses chain, whether summaries were asked for.
func responsesParams(fx *recorder.Fixture) responsesReplay {
	p := responsesReplay{basePath: "/openai/v1", name: responses.ProviderNameOpenAI,
		agent: responses.Agent{Model: "replay-model"}, chaining: responses.ChainPreviousResponse}
	if len(fx.Exchanges) == 0 {
		return p
	}
	first := fx.Exchanges[0].Request
	if base, ok := responsesBase(first.Path); ok {
		p.basePath = base
		if project, ok := strings.CutSuffix(base, "/openai/v1"); ok && strings.HasPrefix(project, "/api/projects/") {
			p.projectPath, p.name = project, responses.ProviderNameFoundry
		}
	}
	if len(first.Query) > 0 {
		q := url.Values{}
		for k, v := range first.Query {
			q.Set(k, v)
		}
		p.query = q.Encode()
	}
	seenResponse := false
	for _, ex := range fx.Exchanges {
		rq := ex.Request
		if rq.Method == http.MethodPost && strings.HasSuffix(rq.Path, "/conversations") {
			p.chaining = responses.ChainConversation
		}
		if rq.Method != http.MethodPost || !strings.HasSuffix(rq.Path, "/responses") {
			continue
		}
		var body struct {
			Model        string                    `json:"model"`
			Agent        *responses.AgentReference `json:"agent_reference"`
			Instructions string                    `json:"instructions"`
			Conversation json.RawMessage           `json:"conversation"`
			Reasoning    *responses.Reasoning      `json:"reasoning"`
		}
		if json.Unmarshal(rq.BodyBytes(), &body) != nil {
			continue
		}
		if len(body.Conversation) > 0 && string(body.Conversation) != "null" {
			p.chaining = responses.ChainConversation
		}
		if seenResponse {
			continue
		}
		seenResponse = true
		if body.Agent != nil {
			p.agent = responses.Agent{Name: body.Agent.Name, Version: body.Agent.Version}
		} else {
			p.agent = responses.Agent{Model: body.Model, Instructions: body.Instructions}
		}
		if body.Reasoning != nil {
			p.summary = body.Reasoning.Summary
		}
	}
	return p
}
