package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// apiReplay is what replaying a recording needs from the agent API it was
// made against: read from the recorded requests, it makes the same
// requests again.
type apiReplay struct {
	// agent is wiring.Config.Agent against the fake upstream at base.
	agent func(base string) func(http.RoundTripper) (brainwire.Provider, error)
	// telemetry is how telemetry names the agent.
	telemetry telemetry.Agent
	// user is the user the recorded requests name, when the API's requests
	// name one: the replay's capture must be that user's.
	user string
	// defined is an agent brainwire defines (its instructions go with
	// each request): the only kind a shadow can try candidates on.
	defined bool
}

// agentAPIs are the APIs replay knows, tried in order: each reads a
// recording whose first request is one of its own.
var agentAPIs = []func(fx *recorder.Fixture, first recorder.Request) (apiReplay, bool){
	threadsRunsAPI, responsesAPI, adkAPI,
}

// apiOf reads how to replay a fixture from the API it was recorded against.
func apiOf(fx *recorder.Fixture) (apiReplay, error) {
	if len(fx.Exchanges) == 0 {
		// A capture refused before any upstream call replays on any API.
		a, _ := threadsRunsAPI(fx, recorder.Request{Path: "/threads"})
		return a, nil
	}
	first := fx.Exchanges[0].Request
	for _, api := range agentAPIs {
		if a, ok := api(fx, first); ok {
			return a, nil
		}
	}
	return apiReplay{}, fmt.Errorf("replay: %s: no known agent API makes the request %s %s", fx.Name, first.Method, first.Path)
}

var assistantID = regexp.MustCompile(`"assistant_id":\s*"([^"]+)"`)

// threadsRunsAPI is the Foundry Agent Service threads/runs API (and the
// simulator's face of it).
func threadsRunsAPI(_ *recorder.Fixture, first recorder.Request) (apiReplay, bool) {
	op := operationPath(first.Path)
	if !strings.HasPrefix(op, "/threads") && !strings.HasPrefix(op, "/assistants") {
		return apiReplay{}, false
	}
	prefix := cmp.Or(projectPrefix(first.Path), "/api/projects/replay")
	apiVersion, agentID := cmp.Or(first.Query["api-version"], "v1"), "asst_replay"
	if m := assistantID.FindSubmatch(first.BodyBytes()); m != nil {
		agentID = string(m[1])
	}
	return apiReplay{
		agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
			return wiring.Foundry(base+prefix, agentID, apiVersion, nil)
		},
		telemetry: telemetry.Agent{Name: AgentName, ID: agentID, Provider: foundry.ProviderName},
	}, true
}

var (
	adkUserID  = regexp.MustCompile(`"userId":\s*"([^"\\]+)"`)
	adkAppName = regexp.MustCompile(`"appName":\s*"([^"]+)"`)
)

// adkAPI is a Google ADK API server's (and the simulator's face of one).
// A new capture's first request creates its session, a follow-up's runs
// the app on the session it continues: one names the app in its path, the
// other in its body.
func adkAPI(fx *recorder.Fixture, first recorder.Request) (apiReplay, bool) {
	prefix, appName, ok := adkRoute(first.Path)
	if !ok {
		return apiReplay{}, false
	}
	if m := adkAppName.FindSubmatch(first.BodyBytes()); appName == "" && m != nil {
		appName = string(m[1])
	}
	appName = cmp.Or(appName, "replay_app")
	a := apiReplay{
		agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
			return wiring.ADK(base+prefix, appName, nil)
		},
		telemetry: telemetry.Agent{Name: AgentName, ID: appName, Provider: adk.ProviderName},
	}
	for _, ex := range fx.Exchanges {
		if m := adkUserID.FindSubmatch(ex.Request.BodyBytes()); m != nil {
			a.user = string(m[1])
			break
		}
	}
	return a, true
}

// adkRoute splits a path of the API server's routes into what comes
// before them (a proxy's prefix) and, for a session route, the app.
func adkRoute(p string) (prefix, appName string, ok bool) {
	for _, route := range []string{"/run_sse", "/list-apps"} {
		if before, found := strings.CutSuffix(p, route); found {
			return before, "", true
		}
	}
	i := strings.Index(p, "/apps/")
	if i < 0 {
		return "", "", false
	}
	seg := strings.Split(p[i+len("/apps/"):], "/")
	if len(seg) < 4 || seg[1] != "users" || seg[3] != "sessions" {
		return "", "", false
	}
	return p[:i], seg[0], true
}

// responsesAPI is the Responses API: a Foundry project's, Azure OpenAI's,
// OpenAI's (and the simulator's face of it). The recorded requests say
// where the API is, how the agent is named, how responses chain and
// whether summaries were asked for.
func responsesAPI(fx *recorder.Fixture, first recorder.Request) (apiReplay, bool) {
	basePath, ok := responsesBase(first.Path)
	if !ok {
		return apiReplay{}, false
	}
	projectPath, name := "", responses.ProviderNameOpenAI
	if project, ok := strings.CutSuffix(basePath, "/openai/v1"); ok && strings.HasPrefix(project, "/api/projects/") {
		projectPath, name = project, responses.ProviderNameFoundry
	}
	if len(first.Query) > 0 {
		q := url.Values{}
		for k, v := range first.Query {
			q.Set(k, v)
		}
		basePath += "?" + q.Encode()
	}
	agent, chaining, summary := responses.Agent{Model: "replay-model"}, responses.ChainPreviousResponse, ""
	seenResponse := false
	for _, ex := range fx.Exchanges {
		rq := ex.Request
		if rq.Method == http.MethodPost && strings.HasSuffix(rq.Path, "/conversations") {
			chaining = responses.ChainConversation
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
			chaining = responses.ChainConversation
		}
		if seenResponse {
			continue
		}
		seenResponse = true
		agent = responses.Agent{Model: body.Model, Instructions: body.Instructions}
		if body.Agent != nil {
			agent = responses.Agent{Name: body.Agent.Name, Version: body.Agent.Version}
		}
		if body.Reasoning != nil {
			summary = body.Reasoning.Summary
		}
	}
	tel := telemetry.Agent{Name: AgentName, Provider: name, ID: agent.Name, Version: agent.Version}
	if agent.Name == "" {
		tel.Version = instructions.New(agent.Instructions, "").Version
	}
	return apiReplay{
		agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
			project := ""
			if projectPath != "" {
				project = base + projectPath
			}
			return wiring.Responses(base+basePath, project, agent, nil,
				responses.WithName(name), responses.WithChaining(chaining), responses.WithReasoningSummary(summary))
		},
		telemetry: tel,
		defined:   agent.Name == "",
	}, true
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
