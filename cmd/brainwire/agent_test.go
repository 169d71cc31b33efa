package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/simulator"
)

const project = "https://r.services.ai.azure.com/api/projects/p"

// TestAgentConfig: each way of naming the agent, from the environment,
// and what the log, telemetry and upstream connections make of it.
func TestAgentConfig(t *testing.T) {
	dir := t.TempDir()
	instr := filepath.Join(dir, "classifier.md")
	os.WriteFile(instr, []byte("File every capture."), 0o644)
	def, custom := instructions.Default().Version, instructions.New("File every capture.", instr).Version
	cases := []struct {
		name string
		env  map[string]string
		face string // serve -sim-api
		want string // API, simulator face, what the log says, telemetry, chaining and summary, upstream
	}{
		{"nothing configured: the simulator's Responses face", nil, "",
			"responses sim=responses [agent defined by brainwire, through the Foundry project's Responses API] {Classifier  " + def + " azure.ai.agents} " +
				"model=brainwire-sim-keywords instructions=" + def + " chaining= summary=auto {H2C:true IdleConns:1024 MaxConns:0}"},
		{"the simulator's Foundry agent", nil, simAgent,
			"responses sim=agent [Foundry agent through the Responses API] {Classifier brainwire-classifier-sim 1 azure.ai.agents} " +
				"agent=brainwire-classifier-sim:1 chaining= summary=auto {H2C:true IdleConns:1024 MaxConns:0}"},
		{"the simulator's classic face", nil, simThreads,
			"threads sim=threads [Foundry Agent Service, classic Agents API (threads/runs)] {Classifier asst_brainwire_sim  azure.ai.agents} " +
				"classic=asst_brainwire_sim {H2C:true IdleConns:1024 MaxConns:0}"},
		{"an agent brainwire defines on a Foundry project", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project + "/",
			"AZURE_AI_MODEL_DEPLOYMENT_NAME": "gpt-5-mini", "BRAINWIRE_INSTRUCTIONS": instr, "BRAINWIRE_REASONING_SUMMARY": "detailed"}, "",
			"responses sim= [agent defined by brainwire, through the Foundry project's Responses API] {Classifier  " + custom + " azure.ai.agents} " +
				"model=gpt-5-mini instructions=" + custom + " chaining= summary=detailed base=" + project + "/openai/v1 {H2C:false IdleConns:1024 MaxConns:0}"},
		{"a Foundry agent by name and version", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project,
			"AZURE_AI_AGENT_NAME": "classifier", "AZURE_AI_AGENT_VERSION": "4", "BRAINWIRE_RESPONSES_CHAINING": "previous_response_id"}, "",
			"responses sim= [Foundry agent through the Responses API] {Classifier classifier 4 azure.ai.agents} " +
				"agent=classifier:4 chaining=previous_response_id summary=auto base=" + project + "/openai/v1 {H2C:false IdleConns:1024 MaxConns:0}"},
		// Only the built-in simulator speaks h2c unasked; 0 connections is no bound.
		{"the classic API", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_ID": "asst_1",
			"AZURE_AI_AGENTS_API_VERSION": "2025-05-15-preview", "BRAINWIRE_UPSTREAM_MAX_CONNS": "0"}, "",
			"threads sim= [Foundry Agent Service, classic Agents API (threads/runs)] {Classifier asst_1  azure.ai.agents} classic=asst_1 {H2C:false IdleConns:1024 MaxConns:-1}"},
		{"Azure OpenAI", map[string]string{"OPENAI_BASE_URL": "https://res.openai.azure.com/openai/v1", "OPENAI_API_KEY": "k",
			"AZURE_AI_MODEL_DEPLOYMENT_NAME": "my-deployment", "BRAINWIRE_REASONING_SUMMARY": "off"}, "",
			"responses sim= [agent defined by brainwire, through an OpenAI-compatible Responses API] {Classifier  " + def + " azure.ai.openai} " +
				"model=my-deployment instructions=" + def + " chaining=previous_response_id summary= base=https://res.openai.azure.com/openai/v1 {H2C:false IdleConns:1024 MaxConns:0}"},
		{"OpenAI, conversations", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k",
			"OPENAI_MODEL": "gpt-5-mini", "BRAINWIRE_RESPONSES_CHAINING": "conversation"}, "",
			"responses sim= [agent defined by brainwire, through an OpenAI-compatible Responses API] {Classifier  " + def + " openai} " +
				"model=gpt-5-mini instructions=" + def + " chaining=conversation summary=auto base=https://api.openai.com/v1 {H2C:false IdleConns:1024 MaxConns:0}"},
		{"an ADK API server", map[string]string{"ADK_API_BASE_URL": "http://127.0.0.1:8001", "ADK_APP_NAME": "a",
			"ADK_AUTH_HEADER": "Authorization: Bearer t0k3n", "BRAINWIRE_UPSTREAM_H2C": "1"}, "",
			"adk sim= [Google ADK API server] {Classifier a  gcp.gen_ai} app=a {H2C:true IdleConns:1024 MaxConns:0}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envFunc(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.face != "" {
				if err := cfg.Agent.useSimulator(c.face); err != nil {
					t.Fatal(err)
				}
			}
			a := cfg.Agent
			what, tel, _ := a.describe()
			got := fmt.Sprintf("%s sim=%s [%s] %v ", a.API, a.Sim, what, tel)
			switch r := a.Responses.Agent; {
			case a.API == apiADK:
				got += "app=" + a.ADK.App
			case a.API == apiThreads:
				got += "classic=" + a.AgentID
			case r.Name != "":
				got += fmt.Sprintf("agent=%s:%s chaining=%s summary=%s", r.Name, r.Version, a.Responses.Chaining, a.Responses.ReasoningSummary)
			default:
				got += fmt.Sprintf("model=%s instructions=%s chaining=%s summary=%s", r.Model, instructions.New(r.Instructions, "").Version,
					a.Responses.Chaining, a.Responses.ReasoningSummary)
			}
			if a.API == apiResponses && a.Sim == "" {
				got += " base=" + a.BaseURL
			}
			if got += fmt.Sprintf(" %+v", cfg.Upstream); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestAgentConfigInPart: an agent setting given in part stops serve at
// start and says what is missing; it never falls back to the simulator.
func TestAgentConfigInPart(t *testing.T) {
	openai := "https://api.openai.com/v1"
	adk := "http://127.0.0.1:8001"
	for _, c := range []struct {
		env  map[string]string
		says string
	}{
		// A setting without its endpoint.
		{map[string]string{"AZURE_AI_MODEL_DEPLOYMENT_NAME": "m"}, "AZURE_AI_MODEL_DEPLOYMENT_NAME is set, but AZURE_AI_PROJECT_ENDPOINT or OPENAI_BASE_URL is not: set the agent service's endpoint, or unset"},
		{map[string]string{"AZURE_AI_AGENT_NAME": "a"}, "AZURE_AI_AGENT_NAME is set, but AZURE_AI_PROJECT_ENDPOINT is not"},
		{map[string]string{"AZURE_AI_AGENT_ID": "asst_1"}, "AZURE_AI_AGENT_ID is set, but AZURE_AI_PROJECT_ENDPOINT is not"},
		{map[string]string{"AZURE_AI_AGENTS_API_VERSION": "v1"}, "AZURE_AI_AGENTS_API_VERSION is set, but AZURE_AI_PROJECT_ENDPOINT is not"},
		{map[string]string{"OPENAI_MODEL": "m"}, "OPENAI_MODEL is set, but OPENAI_BASE_URL is not"},
		{map[string]string{"OPENAI_API_KEY": "k"}, "OPENAI_API_KEY is set, but OPENAI_BASE_URL is not"},
		{map[string]string{"ADK_APP_NAME": "a"}, "ADK_APP_NAME is set, but ADK_API_BASE_URL is not"},
		{map[string]string{"ADK_AUTH_HEADER": "X-Key: k"}, "ADK_AUTH_HEADER is set, but ADK_API_BASE_URL is not"},
		// A setting of one service beside another's endpoint.
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "OPENAI_MODEL": "m"}, "OPENAI_MODEL is set, but OPENAI_BASE_URL is not"},
		{map[string]string{"OPENAI_BASE_URL": openai, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m", "AZURE_AI_AGENT_NAME": "a"}, "AZURE_AI_AGENT_NAME is set, but AZURE_AI_PROJECT_ENDPOINT is not"},
		{map[string]string{"ADK_API_BASE_URL": adk, "ADK_APP_NAME": "a", "AZURE_AI_AGENT_ID": "asst_1"}, "AZURE_AI_AGENT_ID is set, but AZURE_AI_PROJECT_ENDPOINT is not"},
		// An endpoint without the rest.
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project}, "AZURE_AI_PROJECT_ENDPOINT needs one of AZURE_AI_MODEL_DEPLOYMENT_NAME"},
		{map[string]string{"OPENAI_BASE_URL": openai, "OPENAI_API_KEY": "k"}, "OPENAI_BASE_URL needs OPENAI_MODEL"},
		{map[string]string{"OPENAI_BASE_URL": openai, "OPENAI_MODEL": "m"}, "OPENAI_BASE_URL needs OPENAI_API_KEY"},
		{map[string]string{"ADK_API_BASE_URL": adk}, "ADK_API_BASE_URL needs ADK_APP_NAME"},
		// Too much: two services, two ways, a half of a name.
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "OPENAI_BASE_URL": openai, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}, "set one agent service"},
		{map[string]string{"ADK_API_BASE_URL": adk, "ADK_APP_NAME": "a", "AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_ID": "asst_1"}, "set one agent service"},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m"}, "needs one of"},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "AZURE_AI_AGENT_ID": "asst_1"}, "needs one of"},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m", "AZURE_AI_AGENT_VERSION": "2"}, "AZURE_AI_AGENT_VERSION needs AZURE_AI_AGENT_NAME"},
		// The Responses API's settings where they would do nothing.
		{map[string]string{"ADK_API_BASE_URL": adk, "ADK_APP_NAME": "a", "BRAINWIRE_RESPONSES_CHAINING": "conversation"}, "BRAINWIRE_RESPONSES_CHAINING applies to the Responses API, and ADK_API_BASE_URL chooses another"},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_ID": "asst_1", "BRAINWIRE_REASONING_SUMMARY": "off"}, "BRAINWIRE_REASONING_SUMMARY applies to the Responses API, and AZURE_AI_AGENT_ID chooses another"},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "BRAINWIRE_INSTRUCTIONS": "classifier.md"}, "the agent AZURE_AI_AGENT_NAME names has its own"},
	} {
		err := serveOnce(t, c.env)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v; want it to say %q", c.env, err, c.says)
		}
	}
}

// TestServeSaysWhichAgent: serve says which agent captures go to, and
// warns with the retirement date when it is the classic API's; /health
// reaches the agent on each API and says when it is the simulator. serve
// stops at once with nothing in flight, and says so.
func TestServeSaysWhichAgent(t *testing.T) {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	project := sim.URL + simulator.ProjectPath
	cases := []struct {
		name string
		env  map[string]string
		sim  bool
		want []string
		not  []string
	}{
		{"the simulator", nil, true, []string{"built-in keyword simulator, not a model", "agent defined by brainwire, through the Foundry project's Responses API", "instructions=built-in"}, []string{classicRetirement}},
		{"a Foundry agent", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_PROJECT_TOKEN": "t", "AZURE_AI_AGENT_NAME": simulator.DefaultAgentName}, false,
			[]string{"agent: Foundry agent through the Responses API", "agent_name=brainwire-classifier-sim", "agent_version=latest"}, []string{classicRetirement, "keyword simulator"}},
		{"the classic API", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_PROJECT_TOKEN": "t", "AZURE_AI_AGENT_ID": simulator.DefaultAgentID}, false,
			[]string{"classic Agents API (threads/runs)", "retires on " + classicRetirement, "level=WARN"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, logs, stop := runServe(t, c.env)
			resp, err := http.Get(base + "/health")
			if err != nil {
				t.Fatal(err)
			}
			health, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(health), `"agent":{"configured":true,"kind":"azure.ai.agents","reachable":true}`) {
				t.Errorf("health %d %s", resp.StatusCode, health)
			}
			if sim := strings.Contains(string(health), `"simulator":true`); sim != c.sim {
				t.Errorf("health says simulator %v, want %v: %s", sim, c.sim, health)
			}
			post(t, base, "/api/capture", `{"text":"Call mom about her birthday"}`)
			begin := time.Now()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(begin); took > 2*time.Second { // loose for a busy machine; a stop that waits out a timeout takes longer
				t.Errorf("serve took %v to stop with nothing in flight", took)
			}
			c.want = append(c.want, `msg="brainwire stopped"`)
			for _, w := range c.want {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("the log does not say %q:\n%s", w, logs)
				}
			}
			for _, n := range c.not {
				if strings.Contains(logs.String(), n) {
					t.Errorf("the log says %q:\n%s", n, logs)
				}
			}
		})
	}
}

// TestServeOnAnOpenAICompatibleEndpoint runs serve against the
// simulator's OpenAI path with an API key: a capture the agent
// misunderstands, then its follow-up, chained by previous response.
func TestServeOnAnOpenAICompatibleEndpoint(t *testing.T) {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	base := startServe(t, map[string]string{"OPENAI_BASE_URL": sim.URL + "/v1", "OPENAI_API_KEY": "sk-test", "OPENAI_MODEL": simulator.DefaultModel})
	if thread := misunderstoodThenAnswered(t, base); !strings.HasPrefix(thread, "resp_") {
		t.Fatalf("without conversations, the response that filed is what a follow-up continues: %q", thread)
	}
}

// TestSimPrintsEveryWay: `brainwire sim` prints, on its one listener,
// the variables of every way of naming the agent, and each set configures
// an agent service that the simulator serves.
func TestSimPrintsEveryWay(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"sim", "-addr", "127.0.0.1:0"}, envFunc(nil), &out, io.Discard) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(hangBound); !strings.Contains(out.String(), "OPENAI_MODEL="); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sim printed:\n%s", out.String())
		}
	}
	ways := 0
	for block := range strings.SplitSeq(out.String(), "\n\n") {
		env := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^  (\w+)=(.+)$`).FindAllStringSubmatch(block, -1) {
			env[m[1]] = strings.ReplaceAll(m[2], "<any value>", "x")
		}
		if len(env) == 0 {
			continue
		}
		ways++
		cfg, err := loadConfig(envFunc(env))
		if err != nil || cfg.Agent.Sim != "" {
			t.Errorf("%v: %v (simulator %q)", env, err, cfg.Agent.Sim)
			continue
		}
		open, err := cfg.Agent.opener(newCredential())
		if err != nil {
			t.Fatal(err)
		}
		p, err := open(agenthttp.NewTransport())
		if err != nil {
			t.Fatal(err)
		}
		switch p := p.(type) {
		case brainwire.AgentDescriber:
			_, err = p.DescribeAgent(ctx)
		case interface{ Ping(context.Context) error }:
			err = p.Ping(ctx)
		}
		if err != nil {
			t.Errorf("%v: the simulator does not serve the agent: %v", env, err)
		}
	}
	if ways != 5 || !strings.Contains(out.String(), classicRetirement) {
		t.Errorf("%d ways of naming the agent:\n%s", ways, out.String())
	}
}
