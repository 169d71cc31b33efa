package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/shadow"
)

// TestShadowSettings: a shadow trial is off unless candidate instructions
// are given, takes its defaults from them, and every setting that cannot
// be used stops serve at start: a setting without the candidate, a value
// out of range, an empty candidate, an agent whose instructions live in
// the service.
func TestShadowSettings(t *testing.T) {
	dir := t.TempDir()
	cand, empty := filepath.Join(dir, "candidate.md"), filepath.Join(dir, "empty.md")
	os.WriteFile(cand, []byte("Classify.\nProjects cues: passport\n"), 0o600)
	os.WriteFile(empty, nil, 0o600)

	agent, err := loadAgentConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if cfg, err := loadShadowSettings(env(nil), agent, time.Minute); cfg != nil || err != nil {
		t.Errorf("no candidate: %+v, %v", cfg, err)
	}
	cfg, err := loadShadowSettings(env(map[string]string{envShadowInstructions: cand}), agent, time.Minute)
	if err != nil || cfg.Instructions != "Classify.\nProjects cues: passport\n" || cfg.Sample != 1 ||
		cfg.Concurrency != shadow.DefaultConcurrency || cfg.Timeout != time.Minute {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}

	project := "https://r.services.ai.azure.com/api/projects/p"
	for _, c := range []struct {
		env  map[string]string
		want string // the start of the error
	}{
		{map[string]string{envShadowSample: "0.5"}, "BRAINWIRE_SHADOW_SAMPLE is set, but BRAINWIRE_SHADOW_INSTRUCTIONS (the candidate instructions) is not"},
		{map[string]string{envShadowConcurrency: "2"}, "BRAINWIRE_SHADOW_CONCURRENCY is set, but"},
		{map[string]string{envShadowInstructions: cand, envShadowSample: "0"}, `BRAINWIRE_SHADOW_SAMPLE: "0" is not a fraction above 0, at most 1`},
		{map[string]string{envShadowInstructions: cand, envShadowSample: "1.5"}, `BRAINWIRE_SHADOW_SAMPLE: "1.5" is not`},
		{map[string]string{envShadowInstructions: cand, envShadowSample: "half"}, `BRAINWIRE_SHADOW_SAMPLE: "half" is not`},
		{map[string]string{envShadowInstructions: cand, envShadowConcurrency: "0"}, `BRAINWIRE_SHADOW_CONCURRENCY: "0" is not a whole number from 1`},
		{map[string]string{envShadowInstructions: cand, envShadowTimeout: "0"}, `BRAINWIRE_SHADOW_TIMEOUT: "0" is not a duration above zero`},
		{map[string]string{envShadowConfirmAfter: "-1h"}, `BRAINWIRE_SHADOW_CONFIRM_AFTER: "-1h" is not a duration (168h), or 0`},
		{map[string]string{envShadowInstructions: empty}, "BRAINWIRE_SHADOW_INSTRUCTIONS: instructions: " + empty + " is empty"},
		{map[string]string{envShadowInstructions: filepath.Join(dir, "missing.md")}, "BRAINWIRE_SHADOW_INSTRUCTIONS: "},
		{map[string]string{envShadowInstructions: cand, envProject: project, "AZURE_AI_AGENT_NAME": "classifier"},
			"BRAINWIRE_SHADOW_INSTRUCTIONS: shadow trials need an agent brainwire defines (its instructions go with each request); the agent AZURE_AI_AGENT_NAME names"},
		{map[string]string{envShadowInstructions: cand, envProject: project, "AZURE_AI_AGENT_ID": "asst_1"},
			"BRAINWIRE_SHADOW_INSTRUCTIONS: shadow trials need an agent brainwire defines (its instructions go with each request); the agent AZURE_AI_AGENT_ID names"},
		{map[string]string{envShadowInstructions: cand, envADK: "http://localhost:8001", "ADK_APP_NAME": "a"},
			"BRAINWIRE_SHADOW_INSTRUCTIONS: shadow trials need an agent brainwire defines (its instructions go with each request); the agent ADK_API_BASE_URL names"},
	} {
		if err := serveOnce(t, c.env); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v; want %s…", c.env, err, c.want)
		}
	}
	if err := serveOnce(t, map[string]string{envShadowInstructions: cand}, "-sim-api", "threads"); err == nil ||
		!strings.Contains(err.Error(), "the agent -sim-api threads names keeps its instructions in the service") {
		t.Errorf("-sim-api threads: %v", err)
	}
}
