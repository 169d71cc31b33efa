package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/brainwire/brainwire/server"
)

// config is everything `serve` reads from the environment.
type config struct {
	Addr          string
	Keys          server.Keys
	GeneratedKey  string // set when no keys were configured
	DataDir       string
	RunTimeout    time.Duration
	SimChunkDelay time.Duration
	MaxUploads    int
	UploadTimeout time.Duration

	FoundryEndpoint   string // empty: use the in-process simulator
	FoundryAgentID    string
	FoundryAPIVersion string
	FoundryToken      string
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
	if c.UploadTimeout, err = envDuration(getenv, "BRAINWIRE_UPLOAD_TIMEOUT", server.DefaultUploadTimeout); err != nil {
		return c, err
	}
	if c.MaxUploads, err = envInt(getenv, "BRAINWIRE_MAX_UPLOADS", server.DefaultMaxUploads); err != nil {
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
