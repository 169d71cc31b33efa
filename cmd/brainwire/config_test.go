package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/agenthttp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8000" || c.DataDir != "./data" || c.Server.RunTimeout != 60*time.Second ||
		c.Agent.APIVersion != "v1" || c.Agent.Sim != simResponses || c.Server.MaxUploads != 8 || c.Server.UploadTimeout != 2*time.Minute || c.Server.H2C {
		t.Fatalf("defaults %+v", c)
	}
	// No keys configured: one is generated and maps to the default user.
	if !strings.HasPrefix(c.GeneratedKey, "bw_") || len(c.GeneratedKey) < 30 || c.Server.Keys[c.GeneratedKey] != "default" || len(c.Server.Keys) != 1 {
		t.Fatalf("generated key %q, keys %v", c.GeneratedKey, c.Server.Keys)
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
		"BRAINWIRE_MAX_UPLOADS":       "3",
		"BRAINWIRE_UPLOAD_TIMEOUT":    "5m",
		"BRAINWIRE_H2C":               "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GeneratedKey != "" || c.Server.Keys["k-0123456789abcdef"] != "alice" || c.Server.RunTimeout != 90*time.Second ||
		c.Agent.AgentID != "asst_1" || c.Agent.APIVersion != "2025-05-15-preview" ||
		c.Server.MaxUploads != 3 || c.Server.UploadTimeout != 5*time.Minute || !c.Server.H2C {
		t.Fatalf("config %+v", c)
	}
	c, err = loadConfig(env(map[string]string{"BRAINWIRE_AGENT_REFRESH": "30s"}))
	if err != nil || c.Server.AgentRefresh != 30*time.Second {
		t.Fatalf("config %+v, %v", c, err)
	}
	if d, _ := envDuration(env(map[string]string{"X": "1m30s"}), "X", 0); d != 90*time.Second {
		t.Fatalf("duration %v", d)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"short key":                {"BRAINWIRE_API_KEYS": "short"},
		"bad timeout":              {"BRAINWIRE_RUN_TIMEOUT": "soon"},
		"negative timeout":         {"BRAINWIRE_RUN_TIMEOUT": "-5"},
		"bad agent refresh":        {"BRAINWIRE_AGENT_REFRESH": "often"},
		"no uploads":               {"BRAINWIRE_MAX_UPLOADS": "0"},
		"uploads not a number":     {"BRAINWIRE_MAX_UPLOADS": "many"},
		"bad upload timeout":       {"BRAINWIRE_UPLOAD_TIMEOUT": "later"},
		"h2c not a bool":           {"BRAINWIRE_H2C": "maybe"},
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
	if ta := c.Agent.telemetry(); ta.Provider != "gcp.gen_ai" || ta.ID != "brainwire_classifier" {
		t.Fatalf("telemetry names the agent %s %s", ta.Provider, ta.ID)
	}
	if c.Agent.API != apiADK || c.Agent.ADK.BaseURL != "http://127.0.0.1:8001" {
		t.Fatalf("agent config %+v", c.Agent)
	}
}

func TestLoadConfigUpstream(t *testing.T) {
	for _, tc := range []struct {
		env       map[string]string
		h2c       bool
		idleConns int
		maxConns  int
	}{
		// The built-in simulator speaks h2c; other services negotiate.
		{nil, true, agenthttp.DefaultIdleConns, 0},
		{map[string]string{"BRAINWIRE_UPSTREAM_H2C": "false", "BRAINWIRE_UPSTREAM_IDLE_CONNS": "64"}, false, 64, 0},
		{map[string]string{"AZURE_AI_PROJECT_ENDPOINT": "https://r.services.ai.azure.com/api/projects/p", "AZURE_AI_AGENT_ID": "asst_1"}, false, agenthttp.DefaultIdleConns, 0},
		{map[string]string{"ADK_API_BASE_URL": "http://127.0.0.1:8001", "ADK_APP_NAME": "a", "BRAINWIRE_UPSTREAM_H2C": "1"}, true, agenthttp.DefaultIdleConns, 0},
		{map[string]string{"BRAINWIRE_UPSTREAM_MAX_CONNS": "32"}, true, agenthttp.DefaultIdleConns, 32},
		{map[string]string{"BRAINWIRE_UPSTREAM_MAX_CONNS": "0"}, true, agenthttp.DefaultIdleConns, -1},
	} {
		c, err := loadConfig(env(tc.env))
		if err != nil || c.Upstream.H2C != tc.h2c || c.Upstream.IdleConns != tc.idleConns || c.Upstream.MaxConns != tc.maxConns {
			t.Errorf("%v: upstream %+v, %v; want h2c %v, %d idle, %d most", tc.env, c.Upstream, err, tc.h2c, tc.idleConns, tc.maxConns)
		}
	}
	for _, e := range []map[string]string{{"BRAINWIRE_UPSTREAM_H2C": "sometimes"}, {"BRAINWIRE_UPSTREAM_IDLE_CONNS": "lots"},
		{"BRAINWIRE_UPSTREAM_MAX_CONNS": "-1"}, {"BRAINWIRE_UPSTREAM_MAX_CONNS": "few"}} {
		if _, err := loadConfig(env(e)); err == nil {
			t.Errorf("%v: accepted", e)
		}
	}
}

func TestLoadConfigRetries(t *testing.T) {
	for env, want := range map[string]int{"": 2, "0": 0, "5": 5} {
		c, err := loadConfig(envFunc(map[string]string{"BRAINWIRE_UPSTREAM_RETRIES": env}))
		if err != nil || c.Retries != want {
			t.Errorf("BRAINWIRE_UPSTREAM_RETRIES=%q: %d, %v; want %d", env, c.Retries, err, want)
		}
	}
	for _, bad := range []string{"-1", "twice"} {
		if _, err := loadConfig(envFunc(map[string]string{"BRAINWIRE_UPSTREAM_RETRIES": bad})); err == nil {
			t.Errorf("BRAINWIRE_UPSTREAM_RETRIES=%q: accepted", bad)
		}
	}
}

// The profiles are served on their own listener, apart from the API.
func TestServePprof(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &strings.Builder{}
	stop, err := servePprof(ctx, "127.0.0.1:0", slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, url, ok := strings.Cut(logs.String(), "addr=")
	if !ok {
		t.Fatalf("log: %s", logs)
	}
	resp, err := http.Get(strings.TrimSpace(url) + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine profile:") {
		t.Fatalf("%d %.200s", resp.StatusCode, b)
	}
	if _, err := servePprof(ctx, "not an address", slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a bad address was accepted")
	}
}
