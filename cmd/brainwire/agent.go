package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// The agent APIs brainwire speaks.
const (
	apiResponses = "responses" // the Responses API: Foundry's current API, Azure OpenAI's, OpenAI's
	apiThreads   = "threads"   // the classic Agents API (threads/runs)
	apiADK       = "adk"       // a Google ADK API server (/run_sse)
)

// The simulator's faces (serve -sim-api, record -api).
const (
	simResponses = "responses" // Responses API, an agent brainwire defines
	simAgent     = "agent"     // Responses API, the simulated Foundry agent by name
	simThreads   = "threads"   // the classic threads/runs API
	simADK       = "adk"       // an ADK API server
)

// simulatorBanner is what serve says when captures go to the built-in
// simulator, so that nobody takes its filings for a model's.
const simulatorBanner = "captures go to the built-in keyword simulator, not a model (it files by keywords, offline)"

// classicRetirement is when Microsoft retires the classic Agents API.
const classicRetirement = "2027-03-31"

// agentConfig is the agent serve and record run captures on: one of the
// three ways to name it on the Responses API, the classic threads/runs
// API, or the built-in simulator.
type agentConfig struct {
	// Sim is the simulator face; "" for a real service.
	Sim string
	API string // apiResponses, apiThreads or apiADK

	// Project is the Foundry project endpoint (the simulator's once it
	// runs); BaseURL the Responses API base URL.
	Project string
	BaseURL string
	Token   string // AZURE_AI_PROJECT_TOKEN: a static bearer token for the project
	// APIKey and APIKeyHeader authorize an OpenAI-compatible endpoint.
	APIKey       string
	APIKeyHeader string

	// Responses names the agent and how responses chain (Responses API).
	Responses    responsesConfig
	Instructions instructions.Instructions // an ephemeral agent's

	// AgentID and APIVersion are the classic agent's (threads/runs).
	AgentID    string
	APIVersion string

	// ADK names an agent app on a Google ADK API server.
	ADK adkConfig

	env func(string) string // the environment it was read from
}

// responsesConfig is an agent on the Responses API and how its runs go.
type responsesConfig struct {
	Agent            responses.Agent
	Chaining         responses.Chaining // "": the provider's default
	ReasoningSummary string             // "": none asked for
	Name             string             // gen_ai.provider.name
}

// adkConfig is an ADK API server's agent app.
type adkConfig struct {
	BaseURL string // ADK_API_BASE_URL (the simulator's once it runs)
	App     string // ADK_APP_NAME
	// AuthHeader is ADK_AUTH_HEADER, "Name: value", for a server behind
	// a proxy.
	AuthHeader string
}

// The endpoints that choose the agent service. With none set, captures
// go to the built-in keyword simulator.
const (
	envProject = "AZURE_AI_PROJECT_ENDPOINT"
	envOpenAI  = "OPENAI_BASE_URL"
	envADK     = "ADK_API_BASE_URL"
)

// agentSettings are the settings that mean something only beside an
// endpoint, and the endpoints each belongs with. One given without its
// endpoint is a configuration in part, refused at start: never a quiet
// fall back to the simulator.
var agentSettings = map[string][]string{
	"AZURE_AI_MODEL_DEPLOYMENT_NAME": {envProject, envOpenAI},
	"AZURE_AI_AGENT_NAME":            {envProject},
	"AZURE_AI_AGENT_VERSION":         {envProject},
	"AZURE_AI_AGENT_ID":              {envProject},
	"AZURE_AI_AGENTS_API_VERSION":    {envProject},
	"OPENAI_MODEL":                   {envOpenAI},
	"OPENAI_API_KEY":                 {envOpenAI},
	"OPENAI_API_KEY_HEADER":          {envOpenAI},
	"ADK_APP_NAME":                   {envADK},
	"ADK_AUTH_HEADER":                {envADK},
}

// checkPartial refuses an agent setting given without its endpoint.
func checkPartial(getenv func(string) string) error {
	for _, name := range slices.Sorted(maps.Keys(agentSettings)) {
		endpoints := agentSettings[name]
		if getenv(name) == "" || slices.ContainsFunc(endpoints, func(e string) bool { return getenv(e) != "" }) {
			continue
		}
		err := fmt.Errorf("%s is set, but %s is not", name, strings.Join(endpoints, " or "))
		if getenv(envProject)+getenv(envOpenAI)+getenv(envADK) == "" {
			err = fmt.Errorf("%w: set the agent service's endpoint, or unset %s to run the built-in keyword simulator", err, name)
		}
		return err
	}
	return nil
}

// loadAgentConfig reads which agent to run from the environment.
func loadAgentConfig(getenv func(string) string) (agentConfig, error) {
	if err := checkPartial(getenv); err != nil {
		return agentConfig{}, err
	}
	a := agentConfig{
		env:          getenv,
		Token:        getenv("AZURE_AI_PROJECT_TOKEN"),
		APIKey:       getenv("OPENAI_API_KEY"),
		APIKeyHeader: getenv("OPENAI_API_KEY_HEADER"),
		AgentID:      getenv("AZURE_AI_AGENT_ID"),
		APIVersion:   cmp.Or(getenv("AZURE_AI_AGENTS_API_VERSION"), foundry.DefaultAPIVersion),
		ADK:          adkConfig{App: getenv("ADK_APP_NAME"), AuthHeader: getenv("ADK_AUTH_HEADER")},
	}
	var err error
	if a.Project, err = envURL(getenv, envProject); err != nil {
		return a, err
	}
	if a.BaseURL, err = envURL(getenv, envOpenAI); err != nil {
		return a, err
	}
	if a.ADK.BaseURL, err = envURL(getenv, envADK); err != nil {
		return a, err
	}
	a.Project, a.ADK.BaseURL = strings.TrimRight(a.Project, "/"), strings.TrimRight(a.ADK.BaseURL, "/")
	if a.APIKeyHeader != "" && !httpguts.ValidHeaderFieldName(a.APIKeyHeader) {
		return a, badSetting("OPENAI_API_KEY_HEADER", a.APIKeyHeader, "a header name (api-key, Authorization)")
	}
	name, version := getenv("AZURE_AI_AGENT_NAME"), getenv("AZURE_AI_AGENT_VERSION")
	model := getenv("AZURE_AI_MODEL_DEPLOYMENT_NAME")
	// The reasoning summary: auto (the default), concise, detailed, or
	// off for models without reasoning.
	if a.Responses.ReasoningSummary, err = envParse(getenv, "BRAINWIRE_REASONING_SUMMARY", "auto", "auto, concise, detailed or off", func(v string) (string, bool) {
		switch v {
		case "auto", "concise", "detailed":
			return v, true
		}
		return "", v == "off" || v == "none"
	}); err != nil {
		return a, err
	}
	if a.Responses.Chaining, err = envParse(getenv, "BRAINWIRE_RESPONSES_CHAINING", "", string(responses.ChainConversation)+" or "+string(responses.ChainPreviousResponse), func(v string) (responses.Chaining, bool) {
		c := responses.Chaining(v)
		return c, c == responses.ChainConversation || c == responses.ChainPreviousResponse
	}); err != nil {
		return a, err
	}
	if version != "" && name == "" {
		return a, fmt.Errorf("AZURE_AI_AGENT_VERSION needs AZURE_AI_AGENT_NAME")
	}
	if a.ADK.AuthHeader != "" {
		if _, _, err := adk.ParseHeader(a.ADK.AuthHeader); err != nil {
			return a, fmt.Errorf("ADK_AUTH_HEADER: %w", err) // without the value, a secret
		}
	}
	if n := count(a.Project, a.BaseURL, a.ADK.BaseURL); n > 1 {
		return a, fmt.Errorf("set one agent service: %s (a Foundry project), %s (another Responses API endpoint) or %s (an ADK API server)", envProject, envOpenAI, envADK)
	}
	switch {
	case a.ADK.BaseURL != "":
		if a.ADK.App == "" {
			return a, fmt.Errorf("ADK_API_BASE_URL needs ADK_APP_NAME (the agent app)")
		}
		a.API = apiADK
	case a.Project != "":
		if n := count(name, model, a.AgentID); n != 1 {
			return a, fmt.Errorf("AZURE_AI_PROJECT_ENDPOINT needs one of AZURE_AI_MODEL_DEPLOYMENT_NAME (an agent brainwire defines), " +
				"AZURE_AI_AGENT_NAME (a Foundry agent) or AZURE_AI_AGENT_ID (a classic agent, threads/runs API)")
		}
		if a.AgentID != "" {
			a.API = apiThreads
			break
		}
		a.API, a.BaseURL = apiResponses, responses.ProjectBaseURL(a.Project)
		a.Responses.Name = responses.ProviderNameFoundry
		a.Responses.Agent = responses.Agent{Name: name, Version: version, Model: model}
	case a.BaseURL != "":
		if model = cmp.Or(getenv("OPENAI_MODEL"), model); model == "" {
			return a, fmt.Errorf("OPENAI_BASE_URL needs OPENAI_MODEL (the model, or the Azure OpenAI deployment)")
		}
		if a.APIKey == "" {
			return a, fmt.Errorf("OPENAI_BASE_URL needs OPENAI_API_KEY")
		}
		a.API = apiResponses
		a.Responses.Name = endpointProvider(a.BaseURL)
		a.Responses.Agent = responses.Agent{Model: model}
		if a.Responses.Chaining == "" {
			// Azure OpenAI and most other servers have no Conversations API.
			a.Responses.Chaining = responses.ChainPreviousResponse
		}
	default:
		// Nothing configured: the built-in simulator, on the face the
		// flags pick (useSimulator again).
		return a, a.useSimulator(simResponses)
	}
	// The Responses API's settings on another API would do nothing.
	if a.API != apiResponses {
		chooser := map[string]string{apiThreads: "AZURE_AI_AGENT_ID", apiADK: envADK}[a.API]
		for _, v := range []string{"BRAINWIRE_RESPONSES_CHAINING", "BRAINWIRE_REASONING_SUMMARY", "BRAINWIRE_INSTRUCTIONS"} {
			if getenv(v) != "" {
				return a, fmt.Errorf("%s applies to the Responses API, and %s chooses another", v, chooser)
			}
		}
	}
	if a.API == apiResponses && a.Responses.Agent.Name == "" {
		a.Instructions = instructions.Default()
		if path := getenv("BRAINWIRE_INSTRUCTIONS"); path != "" {
			if a.Instructions, err = instructions.Load(path); err != nil {
				return a, fmt.Errorf("BRAINWIRE_INSTRUCTIONS: %w", err)
			}
		}
		a.Responses.Agent.Instructions = a.Instructions.Text
	} else if getenv("BRAINWIRE_INSTRUCTIONS") != "" {
		return a, fmt.Errorf("BRAINWIRE_INSTRUCTIONS are for an agent brainwire defines; the agent AZURE_AI_AGENT_NAME names has its own")
	}
	return a, nil
}

// simFaces are the simulator's faces, each the environment that names
// the agent on it, as `brainwire sim` prints them: the simulator is
// configured as an agent service is, its endpoint filled in when it
// starts (simulatorAt).
var simFaces = map[string]map[string]string{
	simResponses: {envProject: simPending, "AZURE_AI_PROJECT_TOKEN": "simulator", "AZURE_AI_MODEL_DEPLOYMENT_NAME": simulator.DefaultModel},
	simAgent: {envProject: simPending, "AZURE_AI_PROJECT_TOKEN": "simulator",
		"AZURE_AI_AGENT_NAME": simulator.DefaultAgentName, "AZURE_AI_AGENT_VERSION": simulator.DefaultAgentVersion},
	simThreads: {envProject: simPending, "AZURE_AI_PROJECT_TOKEN": "simulator", "AZURE_AI_AGENT_ID": simulator.DefaultAgentID},
	simADK:     {envADK: simPending, "ADK_APP_NAME": simulator.DefaultADKApp},
}

// simPending stands for the simulator's endpoint until it listens.
const simPending = "http://simulator.invalid"

// useSimulator points the config at the simulator's face: the agent its
// environment names, beside the settings of the environment that are not
// an agent service's.
func (a *agentConfig) useSimulator(face string) error {
	env, ok := simFaces[face]
	if !ok {
		return fmt.Errorf("%q is not a simulator face (%s, %s, %s or %s)", face, simResponses, simAgent, simThreads, simADK)
	}
	outer := a.env
	sim, err := loadAgentConfig(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if _, setting := agentSettings[k]; setting || k == envProject || k == envOpenAI || k == envADK {
			return "" // a configured service's, beside which record -sim runs
		}
		return outer(k)
	})
	if err != nil {
		return fmt.Errorf("the simulator's %s face: %w", face, err)
	}
	*a = sim
	a.Sim, a.env = face, outer
	return nil
}

// simulatorAt points a simulator config at the simulator at base: its
// Foundry project endpoint, or its ADK face.
func (a *agentConfig) simulatorAt(base string) {
	if a.API == apiADK {
		a.ADK.BaseURL = base
		return
	}
	a.Project = base + simulator.ProjectPath
	if a.API == apiResponses {
		a.BaseURL = responses.ProjectBaseURL(a.Project)
	}
}

func count(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// endpointProvider names an OpenAI-compatible endpoint for telemetry.
func endpointProvider(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return responses.ProviderNameOpenAI
	}
	host := strings.ToLower(u.Hostname())
	for _, suffix := range []string{".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com"} {
		if strings.HasSuffix(host, suffix) {
			return responses.ProviderNameAzureOpenAI
		}
	}
	return responses.ProviderNameOpenAI
}

// opener returns the agent provider's opener (wiring.Config.Agent).
func (a agentConfig) opener(cred credential) (func(http.RoundTripper) (brainwire.Provider, error), error) {
	if a.API == apiADK {
		return wiring.ADK(a.ADK.BaseURL, a.ADK.App, adkAuth(a.ADK.AuthHeader)), nil
	}
	// A Foundry project takes a token; another Responses API endpoint its
	// API key.
	auth := func(next http.RoundTripper) http.RoundTripper {
		return responses.NewAPIKeyTransport(a.APIKey, a.APIKeyHeader, next)
	}
	if a.Project != "" {
		var err error
		if auth, err = foundryAuth(a.Token, cred); err != nil {
			return nil, err
		}
	}
	if a.API == apiThreads {
		return wiring.Foundry(a.Project, a.AgentID, a.APIVersion, auth), nil
	}
	r := a.Responses
	return wiring.Responses(a.BaseURL, a.Project, r.Agent, auth, responses.WithChaining(r.Chaining), responses.WithReasoningSummary(r.ReasoningSummary),
		responses.WithName(r.Name)), nil
}

// describe is what the log and the telemetry say of the agent: one
// decision over the ways of naming it.
func (a agentConfig) describe() (what string, tel telemetry.Agent, attrs []any) {
	tel = telemetry.Agent{Name: agentName, Provider: a.Responses.Name}
	r := a.Responses.Agent
	switch {
	case a.API == apiADK:
		tel.ID, tel.Provider = a.ADK.App, adk.ProviderName
		return "Google ADK API server", tel, []any{"app", a.ADK.App, "auth_header", headerName(a.ADK.AuthHeader)}
	case a.API == apiThreads:
		tel.ID, tel.Provider = a.AgentID, foundry.ProviderName
		return "Foundry Agent Service, classic Agents API (threads/runs)", tel, []any{"agent_id", a.AgentID, "api_version", a.APIVersion}
	case r.Name != "":
		what = "Foundry agent through the Responses API"
		tel.ID, tel.Version = r.Name, r.Version
		attrs = []any{"agent_name", r.Name, "agent_version", cmp.Or(r.Version, "latest")}
	default:
		what = "agent defined by brainwire, through an OpenAI-compatible Responses API"
		if a.Project != "" {
			what = "agent defined by brainwire, through the Foundry project's Responses API"
		}
		tel.Version = a.Instructions.Version
		attrs = []any{"model", r.Model, "instructions", a.Instructions.Source, "instructions_version", a.Instructions.Version}
	}
	return what, tel, append(attrs, "chaining", cmp.Or(a.Responses.Chaining, responses.ChainConversation),
		"reasoning_summary", cmp.Or(a.Responses.ReasoningSummary, "off"))
}

// telemetry describes the agent for the GenAI attributes.
func (a agentConfig) telemetry() telemetry.Agent {
	_, t, _ := a.describe()
	return t
}

// upstream labels recordings: "simulator", "foundry", "adk" or "openai".
func (a agentConfig) upstream() string {
	switch {
	case a.Sim != "":
		return "simulator"
	case a.API == apiADK:
		return "adk"
	case a.Project != "":
		return "foundry"
	}
	return "openai"
}

// logActive says which agent is active: a warning when it is the
// simulator, or the classic API that Microsoft retires.
func (a agentConfig) logActive(log *slog.Logger) {
	what, tel, attrs := a.describe()
	attrs = append([]any{"endpoint", cmp.Or(a.Project, a.BaseURL, a.ADK.BaseURL), "provider", tel.Provider}, attrs...)
	switch {
	case a.Sim != "":
		log.Warn("no agent service configured (AZURE_AI_PROJECT_ENDPOINT, OPENAI_BASE_URL, ADK_API_BASE_URL): "+simulatorBanner,
			append([]any{"api", what}, attrs...)...)
	case a.API == apiThreads:
		log.Warn("AZURE_AI_AGENT_ID selects the classic Agents API (threads/runs), which Microsoft retires on "+classicRetirement+
			": move to a Foundry agent through the Responses API (AZURE_AI_AGENT_NAME) or an agent brainwire defines (AZURE_AI_MODEL_DEPLOYMENT_NAME)",
			append([]any{"api", what}, attrs...)...)
	default:
		log.Info("agent: "+what, attrs...)
	}
}

// openAgent returns the agent provider's opener (wiring.Config.Agent): the
// configured service, or the offline simulator on loopback.
func openAgent(ctx context.Context, cfg config, cred credential, b *backends, log *slog.Logger) (func(http.RoundTripper) (brainwire.Provider, error), error) {
	a := cfg.Agent
	if a.Sim != "" {
		endpoint, stop, err := startSimulator(ctx, cfg.Sim)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, stop)
		a.simulatorAt(endpoint)
	}
	a.logActive(log)
	return a.opener(cred)
}
