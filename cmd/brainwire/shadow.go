package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/shadow"
)

// defaultShadowConfirmAfter is how long an agent filing the person has
// left alone counts as confirmed when shadow trials are scored.
const defaultShadowConfirmAfter = 7 * 24 * time.Hour

// The shadow trial settings; the candidate's instructions file turns the
// trial on.
const (
	envShadowInstructions = "BRAINWIRE_SHADOW_INSTRUCTIONS"
	envShadowSample       = "BRAINWIRE_SHADOW_SAMPLE"
	envShadowConcurrency  = "BRAINWIRE_SHADOW_CONCURRENCY"
	envShadowTimeout      = "BRAINWIRE_SHADOW_TIMEOUT"
	envShadowConfirmAfter = "BRAINWIRE_SHADOW_CONFIRM_AFTER"
)

// loadShadowSettings reads serve's shadow trial: nil when
// BRAINWIRE_SHADOW_INSTRUCTIONS is unset. Only an agent brainwire defines
// (its instructions go with each request) can run other instructions
// beside its own; the others keep theirs in the service. The store is
// checked once it is open.
func loadShadowSettings(getenv func(string) string, agent agentConfig, runTimeout time.Duration) (*shadow.Config, error) {
	if _, err := shadowConfirmAfter(getenv); err != nil {
		return nil, err
	}
	path := getenv(envShadowInstructions)
	if path == "" {
		for _, v := range []string{envShadowSample, envShadowConcurrency, envShadowTimeout} {
			if getenv(v) != "" {
				return nil, fmt.Errorf("%s is set, but %s (the candidate instructions) is not", v, envShadowInstructions)
			}
		}
		return nil, nil
	}
	if agent.API != apiResponses || agent.Responses.Agent.Name != "" {
		chooser := map[string]string{apiThreads: "AZURE_AI_AGENT_ID", apiADK: envADK}[agent.API]
		if chooser == "" {
			chooser = "AZURE_AI_AGENT_NAME"
		}
		if agent.Sim != "" {
			chooser = "-sim-api " + agent.Sim
		}
		return nil, fmt.Errorf("%s: shadow trials need an agent brainwire defines (its instructions go with each request); the agent %s names keeps its instructions in the service", envShadowInstructions, chooser)
	}
	cand, err := instructions.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envShadowInstructions, err)
	}
	cfg := &shadow.Config{Instructions: cand.Text}
	var errs [3]error
	cfg.Sample, errs[0] = envParse(getenv, envShadowSample, 1.0, "a fraction above 0, at most 1 (0.25)", func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil && f > 0 && f <= 1
	})
	cfg.Concurrency, errs[1] = envInt(getenv, envShadowConcurrency, shadow.DefaultConcurrency, 1)
	cfg.Timeout, errs[2] = envDuration(getenv, envShadowTimeout, runTimeout)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// shadowConfirmAfter reads BRAINWIRE_SHADOW_CONFIRM_AFTER: how long a
// filing left alone counts as confirmed (0: only the person's
// recategorizes label a capture).
func shadowConfirmAfter(getenv func(string) string) (time.Duration, error) {
	return envParse(getenv, envShadowConfirmAfter, defaultShadowConfirmAfter, "a duration (168h), or 0", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		return d, err == nil && d >= 0
	})
}
