package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestBadSettingsAreRefused: every setting serve cannot use stops it at
// start, the same way: the variable, the value, and what it accepts.
func TestBadSettingsAreRefused(t *testing.T) {
	project := "https://r.services.ai.azure.com/api/projects/p"
	cases := []struct {
		name     string // the variable refused
		env      map[string]string
		accepted string // what the message says it accepts
	}{
		{"BRAINWIRE_LOG_FORMAT", map[string]string{"BRAINWIRE_LOG_FORMAT": "xml"}, "text or json"},
		{"BRAINWIRE_ADDR", map[string]string{"BRAINWIRE_ADDR": "8000"}, "host:port"},
		{"BRAINWIRE_RUN_TIMEOUT", map[string]string{"BRAINWIRE_RUN_TIMEOUT": "soon"}, "a duration above zero"},
		{"BRAINWIRE_RUN_TIMEOUT", map[string]string{"BRAINWIRE_RUN_TIMEOUT": "0"}, "a duration above zero"},
		{"BRAINWIRE_RUN_TIMEOUT", map[string]string{"BRAINWIRE_RUN_TIMEOUT": "-5"}, "a duration above zero"},
		{"BRAINWIRE_AGENT_REFRESH", map[string]string{"BRAINWIRE_AGENT_REFRESH": "often"}, "a duration above zero"},
		{"BRAINWIRE_UPLOAD_TIMEOUT", map[string]string{"BRAINWIRE_UPLOAD_TIMEOUT": "0s"}, "a duration above zero"},
		{"BRAINWIRE_MAX_UPLOADS", map[string]string{"BRAINWIRE_MAX_UPLOADS": "0"}, "a whole number from 1"},
		{"BRAINWIRE_H2C", map[string]string{"BRAINWIRE_H2C": "maybe"}, "true or false"},
		{"BRAINWIRE_UPSTREAM_H2C", map[string]string{"BRAINWIRE_UPSTREAM_H2C": "sometimes"}, "true or false"},
		{"BRAINWIRE_UPSTREAM_IDLE_CONNS", map[string]string{"BRAINWIRE_UPSTREAM_IDLE_CONNS": "lots"}, "a whole number from 1"},
		{"BRAINWIRE_UPSTREAM_MAX_CONNS", map[string]string{"BRAINWIRE_UPSTREAM_MAX_CONNS": "-1"}, "a whole number from 0"},
		{"BRAINWIRE_REASONING_SUMMARY", map[string]string{"BRAINWIRE_REASONING_SUMMARY": "verbose"}, "auto, concise, detailed or off"},
		{"BRAINWIRE_RESPONSES_CHAINING", map[string]string{"BRAINWIRE_RESPONSES_CHAINING": "threads"}, "conversation or previous_response_id"},
		{"BRAINWIRE_LOG_REASONING", map[string]string{"BRAINWIRE_LOG_REASONING": "sometimes"}, "auto, true or false"},
		{"BRAINWIRE_RECORD_SAMPLE", map[string]string{"BRAINWIRE_RECORD_DIR": t.TempDir(), "BRAINWIRE_RECORD_SAMPLE": "2"}, "a number from 0 to 1"},
		{"BRAINWIRE_PPROF_ADDR", map[string]string{"BRAINWIRE_PPROF_ADDR": "nowhere"}, "host:port"},
		{"AZURE_AI_PROJECT_ENDPOINT", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": "r.services.ai.azure.com/api/projects/p", "AZURE_AI_AGENT_NAME": "a"}, "an https:// (or http://) URL"},
		{"OPENAI_BASE_URL", map[string]string{"OPENAI_BASE_URL": "api.openai.com/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}, "an https:// (or http://) URL"},
		{"OPENAI_API_KEY_HEADER", map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m", "OPENAI_API_KEY_HEADER": "api key"}, "a header name"},
		{"ADK_API_BASE_URL", map[string]string{"ADK_API_BASE_URL": "localhost:8001", "ADK_APP_NAME": "a"}, "an https:// (or http://) URL"},
		{"COSMOS_ENDPOINT", map[string]string{"COSMOS_ENDPOINT": "cosmos.example", "COSMOS_KEY": "k"}, "an https:// (or http://) URL"},
		{"AZURE_STORAGE_ACCOUNT_URL", map[string]string{"AZURE_STORAGE_ACCOUNT_URL": "account"}, "an https:// (or http://) URL"},
		{"AZURE_OPENAI_ENDPOINT", map[string]string{"AZURE_OPENAI_ENDPOINT": "res.openai.azure.com"}, "an https:// (or http://) URL"},
		{"AZURE_OPENAI_TRANSCRIPTION_LANGUAGE", map[string]string{"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT": "whisper",
			"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_TRANSCRIPTION_LANGUAGE": "english"}, "an ISO-639-1 language code"},
		{"BRAINWIRE_INSTRUCTIONS", map[string]string{"AZURE_AI_PROJECT_ENDPOINT": project, "AZURE_AI_MODEL_DEPLOYMENT_NAME": "m", "BRAINWIRE_INSTRUCTIONS": "/nonexistent"}, ""},
	}
	for _, c := range cases {
		err := serveOnce(t, c.env)
		switch {
		case err == nil:
			t.Errorf("%v: serve started", c.env)
		case c.accepted == "": // a file that cannot be read
			if !strings.HasPrefix(err.Error(), c.name+": ") {
				t.Errorf("%v: %v", c.env, err)
			}
		case !strings.HasPrefix(err.Error(), fmt.Sprintf("%s: %q is not ", c.name, c.env[c.name])) || !strings.Contains(err.Error(), c.accepted):
			t.Errorf("%v: %v; want %s: %q is not %s…", c.env, err, c.name, c.env[c.name], c.accepted)
		}
	}
	// Every command checks the settings it reads before it starts.
	for _, args := range [][]string{{"sim"}, {"record", "-text", "x"}, {"eval", "corpus.jsonl"}, {"export-labels"}} {
		if _, err := runCmd(t, map[string]string{"BRAINWIRE_LOG_FORMAT": "xml"}, args...); err == nil || !strings.HasPrefix(err.Error(), "BRAINWIRE_LOG_FORMAT: ") {
			t.Errorf("%s with BRAINWIRE_LOG_FORMAT=xml: %v", args[0], err)
		}
	}
}

// serveOnce runs serve with env: the error it stops with, or nil once it
// listens.
func serveOnce(t *testing.T, env map[string]string, args ...string) error {
	t.Helper()
	_, _, stop, err := tryServe(t, env, args...)
	if err == nil {
		err = stop()
	}
	return err
}

// TestSimulatorFlags: serve's -sim-* flags set the built-in simulator,
// and are refused with an agent service configured; record's -api wants
// the simulator.
func TestSimulatorFlags(t *testing.T) {
	// 0 is no pause, where simulator.Config's 0 is its default.
	if sc, err := (simFlags{}).config(); err != nil || sc.ChunkDelay >= 0 {
		t.Errorf("-sim-chunk-delay 0: the simulator pauses %v (%v)", sc.ChunkDelay, err)
	}
	if err := serveOnce(t, nil, "-sim-api", "gemini"); err == nil || !strings.Contains(err.Error(), `"gemini" is not a simulator face`) {
		t.Errorf("-sim-api gemini: %v", err)
	}
	if err := serveOnce(t, nil, "-sim-chunk-delay", "-1s"); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("-sim-chunk-delay -1s: %v", err)
	}
	if err := serveOnce(t, nil, "-sim-instructions", "/nonexistent"); err == nil || !strings.Contains(err.Error(), "instructions") {
		t.Errorf("-sim-instructions /nonexistent: %v", err)
	}
	// The simulator's face is configured as a service is: the Responses
	// API's settings on another face are refused.
	if err := serveOnce(t, map[string]string{"BRAINWIRE_REASONING_SUMMARY": "off"}, "-sim-api", "threads"); err == nil || !strings.Contains(err.Error(), "applies to the Responses API") {
		t.Errorf("BRAINWIRE_REASONING_SUMMARY on the threads face: %v", err)
	}
	configured := map[string]string{"AZURE_AI_PROJECT_ENDPOINT": "https://r.services.ai.azure.com/api/projects/p", "AZURE_AI_AGENT_NAME": "a"}
	if err := serveOnce(t, configured, "-sim-api", "threads"); err == nil || !strings.Contains(err.Error(), "-sim-api set the built-in simulator, and an agent service is configured") {
		t.Errorf("-sim-api with an agent service: %v", err)
	}
	if _, err := runCmd(t, configured, "record", "-api", "threads", "-text", "x", "-dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "-api picks the simulator's face") {
		t.Errorf("record -api with an agent service: %v", err)
	}
}
