package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/brainwire/brainwire/internal/app"
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
	// AgentRefresh is how often serve asks the agent service which agent
	// version it runs.
	AgentRefresh time.Duration
	// SimInstructions are the simulated agent's instructions (from
	// BRAINWIRE_SIM_INSTRUCTIONS_FILE); "" keeps its own.
	SimInstructions string
	// SimVariation varies the simulator's answers (eval's flags set it).
	SimVariation  simulator.Variation
	MaxUploads    int
	UploadTimeout time.Duration
	// H2C accepts HTTP/2 without TLS beside HTTP/1.1 (BRAINWIRE_H2C).
	H2C bool

	FoundryEndpoint   string // empty: use the in-process simulator
	FoundryAgentID    string
	FoundryAPIVersion string
	FoundryToken      string

	// Agent is the agent captures run on (agent.go).
	Agent agentConfig
	// Upstream shapes the connections to it (upstream.go).
	Upstream app.Upstream
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Addr:              envOr(getenv, "BRAINWIRE_ADDR", "127.0.0.1:8000"),
		DataDir:           envOr(getenv, "BRAINWIRE_DATA_DIR", "./data"),
		FoundryEndpoint:   getenv("AZURE_AI_PROJECT_ENDPOINT"),
		FoundryAgentID:    getenv("AZURE_AI_AGENT_ID"),
		FoundryAPIVersion: envOr(getenv, "AZURE_AI_AGENTS_API_VERSION", "v1"),
		FoundryToken:      getenv("AZURE_AI_PROJECT_TOKEN"),
	}
	var err error
	if c.RunTimeout, err = envDuration(getenv, "BRAINWIRE_RUN_TIMEOUT", server.DefaultRunTimeout); err != nil {
		return c, err
	}
	if c.SimChunkDelay, err = envDuration(getenv, "BRAINWIRE_SIM_CHUNK_DELAY", 25*time.Millisecond); err != nil {
		return c, err
	}
	if c.AgentRefresh, err = envDuration(getenv, "BRAINWIRE_AGENT_REFRESH", server.DefaultAgentRefresh); err != nil {
		return c, err
	}
	if path := getenv("BRAINWIRE_SIM_INSTRUCTIONS_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("BRAINWIRE_SIM_INSTRUCTIONS_FILE: %w", err)
		}
		c.SimInstructions = string(b)
	}
	if c.UploadTimeout, err = envDuration(getenv, "BRAINWIRE_UPLOAD_TIMEOUT", server.DefaultUploadTimeout); err != nil {
		return c, err
	}
	if c.MaxUploads, err = envInt(getenv, "BRAINWIRE_MAX_UPLOADS", server.DefaultMaxUploads); err != nil {
		return c, err
	}
	if c.H2C, err = envBool(getenv, "BRAINWIRE_H2C", false); err != nil {
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
	if c.Agent, err = loadAgentConfig(getenv); err != nil {
		return c, err
	}
	if c.Upstream, err = loadUpstream(getenv, c.Agent); err != nil {
		return c, err
	}
	return c, nil
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

// envBool accepts what strconv.ParseBool does (true, false, 1, 0, ...).
func envBool(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not true or false", name, v)
	}
	return b, nil
}

// envInt accepts a whole number from 1.
func envInt(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: %q is not a whole number from 1", name, v)
	}
	return n, nil
}
