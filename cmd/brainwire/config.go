package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
)

// config is everything `serve` reads from the environment.
type config struct {
	Addr          string
	Keys          server.Keys
	GeneratedKey  string // set when no keys were configured
	DataDir       string
	RunTimeout    time.Duration
	SimChunkDelay time.Duration

	FoundryEndpoint   string // empty: use the in-process simulator
	FoundryAgentID    string
	FoundryAPIVersion string
	FoundryToken      string

	// ADKBaseURL selects an agent served by a Google ADK API server
	// instead of Foundry.
	ADKBaseURL string
	ADKAppName string
	// ADKAuthHeader is "Name: value", for a server behind a proxy.
	ADKAuthHeader string
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Addr:              envOr(getenv, "BRAINWIRE_ADDR", "127.0.0.1:8000"),
		DataDir:           envOr(getenv, "BRAINWIRE_DATA_DIR", "./data"),
		FoundryEndpoint:   getenv("AZURE_AI_PROJECT_ENDPOINT"),
		FoundryAgentID:    getenv("AZURE_AI_AGENT_ID"),
		FoundryAPIVersion: envOr(getenv, "AZURE_AI_AGENTS_API_VERSION", "v1"),
		FoundryToken:      getenv("AZURE_AI_PROJECT_TOKEN"),
		ADKBaseURL:        getenv("ADK_API_BASE_URL"),
		ADKAppName:        getenv("ADK_APP_NAME"),
		ADKAuthHeader:     getenv("ADK_AUTH_HEADER"),
	}
	var err error
	if c.RunTimeout, err = envDuration(getenv, "BRAINWIRE_RUN_TIMEOUT", server.DefaultRunTimeout); err != nil {
		return c, err
	}
	if c.SimChunkDelay, err = envDuration(getenv, "BRAINWIRE_SIM_CHUNK_DELAY", 25*time.Millisecond); err != nil {
		return c, err
	}
	if keys := getenv("BRAINWIRE_API_KEYS"); keys != "" {
		if c.Keys, err = server.ParseKeys(keys); err != nil {
			return c, fmt.Errorf("BRAINWIRE_API_KEYS: %w", err)
		}
	} else {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return c, fmt.Errorf("generating an api key: %w", err)
		}
		c.GeneratedKey = "bw_" + base64.RawURLEncoding.EncodeToString(b)
		c.Keys = server.Keys{c.GeneratedKey: "default"}
	}
	if c.FoundryEndpoint != "" && c.FoundryAgentID == "" {
		return c, fmt.Errorf("AZURE_AI_AGENT_ID is required when AZURE_AI_PROJECT_ENDPOINT is set")
	}
	if c.ADKBaseURL != "" {
		switch {
		case c.FoundryEndpoint != "":
			return c, fmt.Errorf("ADK_API_BASE_URL and AZURE_AI_PROJECT_ENDPOINT are both set: choose one agent service")
		case c.ADKAppName == "":
			return c, fmt.Errorf("ADK_APP_NAME is required when ADK_API_BASE_URL is set")
		}
	}
	if c.ADKAuthHeader != "" {
		if _, _, err := adk.ParseHeader(c.ADKAuthHeader); err != nil {
			return c, fmt.Errorf("ADK_AUTH_HEADER: %w", err)
		}
	}
	return c, nil
}

// agentIdentity is how telemetry names the configured agent service and
// agent: its gen_ai.provider.name and gen_ai.agent.id.
func (c config) agentIdentity() (provider, agentID string) {
	switch {
	case c.ADKBaseURL != "":
		return adk.ProviderName, c.ADKAppName
	case c.FoundryEndpoint != "":
		return foundry.ProviderName, c.FoundryAgentID
	}
	return foundry.ProviderName, simulator.DefaultAgentID
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// envDuration accepts a Go duration ("90s", "1m") or a number of seconds.
func envDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, fmt.Errorf("%s: must not be negative", name)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration (e.g. 60s) or a number of seconds", name, v)
	}
	return d, nil
}
