package main

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8000" || c.DataDir != "./data" || c.RunTimeout != 60*time.Second ||
		c.FoundryAPIVersion != "v1" || c.FoundryEndpoint != "" {
		t.Fatalf("defaults %+v", c)
	}
	// No keys configured: one is generated and maps to the default user.
	if !strings.HasPrefix(c.GeneratedKey, "bw_") || len(c.GeneratedKey) < 30 || c.Keys[c.GeneratedKey] != "default" || len(c.Keys) != 1 {
		t.Fatalf("generated key %q, keys %v", c.GeneratedKey, c.Keys)
	}
	other, _ := loadConfig(env(nil))
	if other.GeneratedKey == c.GeneratedKey {
		t.Fatal("generated keys repeat")
	}
}

func TestLoadConfigFromEnvironment(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"BRAINWIRE_API_KEYS":          "k-0123456789abcdef:alice",
		"BRAINWIRE_RUN_TIMEOUT":       "90",
		"AZURE_AI_PROJECT_ENDPOINT":   "https://r.services.ai.azure.com/api/projects/p",
		"AZURE_AI_AGENT_ID":           "asst_1",
		"AZURE_AI_AGENTS_API_VERSION": "2025-05-15-preview",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GeneratedKey != "" || c.Keys["k-0123456789abcdef"] != "alice" || c.RunTimeout != 90*time.Second ||
		c.FoundryAgentID != "asst_1" || c.FoundryAPIVersion != "2025-05-15-preview" {
		t.Fatalf("config %+v", c)
	}
	if d, _ := envDuration(env(map[string]string{"X": "1m30s"}), "X", 0); d != 90*time.Second {
		t.Fatalf("duration %v", d)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"short key":              {"BRAINWIRE_API_KEYS": "short"},
		"bad timeout":            {"BRAINWIRE_RUN_TIMEOUT": "soon"},
		"negative timeout":       {"BRAINWIRE_RUN_TIMEOUT": "-5"},
		"endpoint without agent": {"AZURE_AI_PROJECT_ENDPOINT": "https://r.services.ai.azure.com/api/projects/p"},
		"adk without app":        {"ADK_API_BASE_URL": "http://127.0.0.1:8001"},
		"adk and foundry": {"ADK_API_BASE_URL": "http://127.0.0.1:8001", "ADK_APP_NAME": "a",
			"AZURE_AI_PROJECT_ENDPOINT": "https://r.services.ai.azure.com/api/projects/p", "AZURE_AI_AGENT_ID": "asst_1"},
		"adk header without value": {"ADK_API_BASE_URL": "http://127.0.0.1:8001", "ADK_APP_NAME": "a", "ADK_AUTH_HEADER": "X-Api-Key"},
	} {
		if _, err := loadConfig(env(e)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLoadConfigADK(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"ADK_API_BASE_URL": "http://127.0.0.1:8001",
		"ADK_APP_NAME":     "brainwire_classifier",
		"ADK_AUTH_HEADER":  "Authorization: Bearer t0k3n-0123456789",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if provider, id := c.agentIdentity(); provider != "gcp.gen_ai" || id != "brainwire_classifier" {
		t.Fatalf("telemetry names the agent %s %s", provider, id)
	}
	if provider, id := (config{}).agentIdentity(); provider != "azure.ai.agents" || id != "asst_brainwire_sim" {
		t.Fatalf("the simulator's agent: %s %s", provider, id)
	}
}
