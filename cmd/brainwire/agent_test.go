package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/simulator"
)

const project = "https://r.services.ai.azure.com/api/projects/p"

// simFace stands in TestAgentConfig's cases for serve -sim-api.
const simFace = "-sim-api"

func TestAgentConfig(t *testing.T) {
	dir := t.TempDir()
	instr := filepath.Join(dir, "classifier.md")
	os.WriteFile(instr, []byte("File every capture."), 0o644)
	custom := instructions.New("File every capture.", instr)
	cases := []struct {
		name string
		env  map[string]string
		want string // API, simulator face, agent, chaining, provider, telemetry id and version
	}{
		{"nothing configured: the simulator's Responses face", nil,
			"responses sim=responses model=brainwire-sim-keywords instructions=" + instructions.Default().Version + " chaining= summary=auto provider=azure.ai.agents id= version=" + instructions.Default().Version},
		{"the simulator's Foundry agent", map[string]string{simFace: simAgent},
			"responses sim=agent agent=brainwire-classifier-sim:1 chaining= summary=auto provider=azure.ai.agents id=brainwire-classifier-sim version=1"},
		{"the simulator's classic face", map[string]string{simFace: simThreads},
			"threads sim=threads classic=asst_brainwire_sim provider=azure.ai.agents id=asst_brainwire_sim version="},
		{"an agent brainwire defines on a Foundry project", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project + "/",
			"AZURE_AI_MODEL_DEPLOYMENT_NAME": "gpt-5-mini", "BRAINWIRE_INSTRUCTIONS": instr, "BRAINWIRE_REASONING_SUMMARY": "detailed"},
			"responses sim= model=gpt-5-mini instructions=" + custom.Version + " chaining= summary=detailed provider=azure.ai.agents id= version=" + custom.Version +
				" base=" + project + "/openai/v1"},
		{"a Foundry agent by name and version", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project,
			"AZURE_AI_AGENT_NAME": "classifier", "AZURE_AI_AGENT_VERSION": "4", "BRAINWIRE_RESPONSES_CHAINING": "previous_response_id"},
			"responses sim= agent=classifier:4 chaining=previous_response_id summary=auto provider=azure.ai.agents id=classifier version=4 base=" + project + "/openai/v1"},
		{"the classic API", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_ID": "asst_1"},
			"threads sim= classic=asst_1 provider=azure.ai.agents id=asst_1 version="},
		{"Azure OpenAI", map[string]string{"OPENAI_BASE_URL": "https://res.openai.azure.com/openai/v1", "OPENAI_API_KEY": "k",
			"AZURE_AI_MODEL_DEPLOYMENT_NAME": "my-deployment", "BRAINWIRE_REASONING_SUMMARY": "off"},
			"responses sim= model=my-deployment instructions=" + instructions.Default().Version + " chaining=previous_response_id summary= provider=azure.ai.openai id= version=" +
				instructions.Default().Version + " base=https://res.openai.azure.com/openai/v1"},
		{"OpenAI, conversations", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k",
			"OPENAI_MODEL": "gpt-5-mini", "BRAINWIRE_RESPONSES_CHAINING": "conversation"},
			"responses sim= model=gpt-5-mini instructions=" + instructions.Default().Version + " chaining=conversation summary=auto provider=openai id= version=" +
				instructions.Default().Version + " base=https://api.openai.com/v1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(env(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if face := c.env[simFace]; face != "" { // serve -sim-api
				if err := cfg.Agent.useSimulator(face); err != nil {
					t.Fatal(err)
				}
			}
			if got := describeAgent(cfg.Agent); got != c.want {
				t.Errorf("\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func describeAgent(a agentConfig) string {
	tel := a.telemetry()
	s := a.API + " sim=" + a.Sim + " "
	switch ag := a.Responses.Agent; {
	case a.API == apiThreads:
		s += "classic=" + a.AgentID
	case ag.Name != "":
		s += "agent=" + ag.Name + ":" + ag.Version + " chaining=" + string(a.Responses.Chaining) + " summary=" + a.Responses.ReasoningSummary
	default:
		s += "model=" + ag.Model + " instructions=" + instructions.New(ag.Instructions, "").Version + " chaining=" + string(a.Responses.Chaining) +
			" summary=" + a.Responses.ReasoningSummary
	}
	s += " provider=" + tel.Provider + " id=" + tel.ID + " version=" + tel.Version
	if a.API == apiResponses && a.Sim == "" {
		s += " base=" + a.BaseURL
	}
	return s
}

func TestAgentConfigErrors(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"two endpoints":        {"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"},
		"no agent":             {"AZURE_AI_PROJECT_ENDPOINT": project},
		"two ways":             {"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m"},
		"classic and new":      {"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": "a", "AZURE_AI_AGENT_ID": "asst_1"},
		"version alone":        {"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m", "AZURE_AI_AGENT_VERSION": "2"},
		"compat without key":   {"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_MODEL": "m"},
		"compat without model": {"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k"},
		"compat with an agent": {"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m", "AZURE_AI_AGENT_NAME": "a"},
		"bad chaining":         {"BRAINWIRE_RESPONSES_CHAINING": "threads"},
		"bad summary":          {"BRAINWIRE_REASONING_SUMMARY": "verbose"},
		"missing instructions": {"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m", "BRAINWIRE_INSTRUCTIONS": "/nonexistent/classifier.md"},
	} {
		if _, err := loadConfig(env(e)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestServeLogsTheActiveAgent: serve says which agent captures go to, and
// warns with the retirement date when it is the classic API's; /health
// reaches the agent on each API.
func TestServeLogsTheActiveAgent(t *testing.T) {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	project := sim.URL + simulator.ProjectPath
	cases := []struct {
		name string
		env  map[string]string
		want []string
		not  []string
	}{
		{"the simulator", nil, []string{"built-in offline simulator", "agent defined by brainwire, through the Foundry project's Responses API", "instructions=built-in"}, []string{classicRetirement}},
		{"a Foundry agent", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_PROJECT_TOKEN": "t", "AZURE_AI_AGENT_NAME": simulator.DefaultAgentName},
			[]string{"agent: Foundry agent through the Responses API", "agent_name=brainwire-classifier-sim", "agent_version=latest"}, []string{classicRetirement, "simulator"}},
		{"the classic API", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_PROJECT_TOKEN": "t", "AZURE_AI_AGENT_ID": simulator.DefaultAgentID},
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
			if err := stop(); err != nil {
				t.Fatal(err)
			}
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
	post := func(path, body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+phoneKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	out := post("/api/capture", `{"text":"hmm zzkx"}`)
	var frame struct {
		Value struct {
			InboxItemID           string `json:"inboxItemId"`
			FoundryConversationID string `json:"foundryConversationId"`
		}
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, `"MISUNDERSTOOD"`) {
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &frame)
		}
	}
	if !strings.HasPrefix(frame.Value.FoundryConversationID, "resp_") {
		t.Fatalf("without conversations, the response that filed is what a follow-up continues:\n%s", out)
	}
	body, _ := json.Marshal(map[string]any{"inbox_item_id": frame.Value.InboxItemID, "follow_up_text": "I meant call my sister about her birthday", "follow_up_round": 1})
	if out := post("/api/capture/follow-up", string(body)); !strings.Contains(out, `"type":"CLASSIFIED","value":{"inboxItemId":"`+frame.Value.InboxItemID+`","bucket":"People"`) {
		t.Fatalf("follow-up:\n%s", out)
	}
}

func TestSimPrintsEveryWay(t *testing.T) {
	var b bytes.Buffer
	printSimulatorEnv(&b, "http://127.0.0.1:8100")
	for _, want := range []string{
		"AZURE_AI_PROJECT_ENDPOINT=http://127.0.0.1:8100/api/projects/sim\n",
		"AZURE_AI_MODEL_DEPLOYMENT_NAME=" + simulator.DefaultModel,
		"AZURE_AI_AGENT_NAME=" + simulator.DefaultAgentName,
		"OPENAI_BASE_URL=http://127.0.0.1:8100/v1\n",
		"AZURE_AI_AGENT_ID=" + simulator.DefaultAgentID,
		classicRetirement,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sim does not print %q:\n%s", want, b.String())
		}
	}
	// Each set of variables configures serve.
	for _, e := range []map[string]string{
		{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_MODEL_DEPLOYMENT_NAME": simulator.DefaultModel},
		{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_NAME": simulator.DefaultAgentName, "AZURE_AI_AGENT_VERSION": simulator.DefaultAgentVersion},
		{"OPENAI_BASE_URL": "http://127.0.0.1:8100/v1", "OPENAI_API_KEY": "x", "OPENAI_MODEL": simulator.DefaultModel},
		{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_AGENT_ID": simulator.DefaultAgentID},
	} {
		if _, err := loadConfig(envFunc(e)); err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
}
