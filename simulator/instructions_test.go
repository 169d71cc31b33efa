package simulator_test

import (
	"encoding/json"
	"testing"

	"github.com/brainwire/brainwire/simulator"
)

// runWith starts a capture run with instructions and returns what its
// file_capture call files.
func (c *client) runWith(instructions, text string) fileArgs {
	c.t.Helper()
	body := map[string]any{
		"assistant_id": testAgent,
		"thread":       map[string]any{"messages": []any{userMessage(text)}},
		"tools":        json.RawMessage(testTools),
	}
	if instructions != "" {
		body["instructions"] = instructions
	}
	_, calls := pendingCalls(c.t, c.stream("/threads/runs", body))
	return fileCall(c.t, calls[0])
}

// TestInstructionRulesSteerTheClassifier checks that cue rules in a run's
// instructions change what it files, as new instructions would change a
// model's answers, and that other prose changes nothing.
func TestInstructionRulesSteerTheClassifier(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	tests := []struct {
		name, instructions, text string
		bucket, status           string
	}{
		{"no rules", "", "Go to the gym after work", "Ideas", "misunderstood"},
		{"prose only", "Classify every capture carefully.\nPeople are important.", "Go to the gym after work", "Ideas", "misunderstood"},
		{"a new cue", "Classify carefully.\nAdmin cues: gym, haircut", "Go to the gym after work", "Admin", "classified"},
		{"list marker and case", "- ADMIN CUES: Gym", "Go to the gym after work", "Admin", "classified"},
		{"a multi-word cue", "Projects cues: after work", "Go to the gym after work", "Projects", "classified"},
		// "buy" is a built-in Admin cue; moving it makes the capture Ideas.
		{"a cue moved", "Ideas cues: buy", "buy a telescope", "Ideas", "classified"},
		{"a cue ignored", "Ignore cues: buy", "buy a telescope", "Ideas", "misunderstood"},
		{"unknown bucket ignored", "Errands cues: gym", "Go to the gym after work", "Ideas", "misunderstood"},
		{"empty rule ignored", "Admin cues: , ,", "Go to the gym after work", "Ideas", "misunderstood"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := c.runWith(tc.instructions, tc.text)
			if a.Bucket != tc.bucket || a.Status != tc.status {
				t.Errorf("filed %s (%s, %v), want %s (%s)", a.Bucket, a.Status, *a.Confidence, tc.bucket, tc.status)
			}
		})
	}
}

// TestAgentInstructionsSteerRuns checks that the agent's own instructions
// apply to runs that bring none, and that the assistant reports them.
func TestAgentInstructionsSteerRuns(t *testing.T) {
	c, _ := newSim(t, simulator.Config{Instructions: "Admin cues: gym"})
	if a := c.runWith("", "Go to the gym after work"); a.Bucket != "Admin" {
		t.Errorf("agent instructions ignored: filed %s", a.Bucket)
	}
	// A run's own instructions replace the agent's, rules included.
	if a := c.runWith("Classify carefully.", "Go to the gym after work"); a.Bucket != "Ideas" || a.Status != "misunderstood" {
		t.Errorf("run instructions did not replace the agent's: filed %s %s", a.Bucket, a.Status)
	}
	var agent struct{ Instructions string }
	c.call("GET", "/assistants/"+simulator.DefaultAgentID, nil, 200, &agent)
	if agent.Instructions != "Admin cues: gym" {
		t.Errorf("assistant %+v", agent)
	}
}
