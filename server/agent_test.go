package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/server"
)

// captureWithRunID posts a capture with a run id of our choosing.
func (h *harness) captureWithRunID(text, runID string) []frame {
	h.t.Helper()
	b, _ := json.Marshal(map[string]string{"text": text, "run_id": runID})
	return h.readStream(h.post("/api/capture", "application/json", string(b)))
}

// TestCapturesCarryTheAgentAndItsTrace checks the path from the agent's
// description to the stored item: the capture carries the agent version,
// the filing keeps it with where the run was traced, and a recategorize is
// reported as a correction of that run.
func TestCapturesCarryTheAgentAndItsTrace(t *testing.T) {
	w := &recorder{}
	h := newHarness(t, nil, withSimulator(t), withObserver(w))
	agent, err := h.server.RefreshAgent(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if agent.Version == "" || agent.Version != agent.InstructionsHash || agent.Model == "" || agent.Instructions == "" {
		t.Fatalf("agent %+v", agent)
	}
	frames := h.captureWithRunID("Call mom about her birthday on Sunday", "run-01")
	if frames[2].Data["type"] != "CLASSIFIED" {
		t.Fatalf("capture:\n%s", payloads(frames))
	}
	caps, _ := w.seen()
	if len(caps) != 1 || caps[0].Agent.Version != agent.Version {
		t.Fatalf("observed captures %+v", caps)
	}
	items := h.inbox(testUser)
	run := items[0].AgentRun
	if run == nil || run.RunID != "run-01" || run.AgentVersion != agent.Version || run.InstructionsHash != agent.InstructionsHash ||
		run.Model != agent.Model || run.Outcome != brainwire.OutcomeClassified || run.Bucket != "People" ||
		run.TraceID != "0af7651916cd43dd8448eb211c80319c" || run.SpanID != "b7ad6b7169203301" {
		t.Fatalf("item's agent run %+v", run)
	}

	r := h.do("PATCH", "/api/inbox/"+items[0].ID+"/recategorize", testKey, "bearer", "application/json", `{"bucket":"Ideas"}`)
	if r.status != http.StatusOK {
		t.Fatalf("recategorize: %d %s", r.status, r.body)
	}
	r = h.do("PATCH", "/api/inbox/"+items[0].ID+"/recategorize", testKey, "bearer", "application/json", `{"bucket":"People"}`)
	if r.status != http.StatusOK {
		t.Fatalf("recategorize: %d %s", r.status, r.body)
	}
	// A refused recategorize is no correction.
	if r := h.do("PATCH", "/api/inbox/"+items[0].ID+"/recategorize", testKey, "bearer", "application/json", `{"bucket":"Misc"}`); r.status != 400 {
		t.Fatalf("bad bucket: %d", r.status)
	}
	_, corr := w.seen()
	if len(corr) != 2 {
		t.Fatalf("corrections %+v, want two", corr)
	}
	moved, confirmed := corr[0], corr[1]
	if moved.Kind != brainwire.CorrectionRecategorize || moved.ItemID != items[0].ID || moved.UserID != testUser ||
		moved.Bucket != "Ideas" || moved.Run != *run || moved.Agreed() || !moved.At.Equal(fixedNow) {
		t.Errorf("first correction %+v", moved)
	}
	// The item keeps the agent's run, so moving it back agrees with it.
	if confirmed.Bucket != "People" || confirmed.Run != *run || !confirmed.Agreed() {
		t.Errorf("second correction %+v", confirmed)
	}
}

// TestFollowUpIsACorrectionOfTheRunThatAsked checks that answering a
// misunderstood capture's question is reported against the run that asked,
// with the round and what the follow-up filed, and that the item then
// records the follow-up's run.
func TestFollowUpIsACorrectionOfTheRunThatAsked(t *testing.T) {
	w := &recorder{}
	h := newHarness(t, nil, withSimulator(t), withObserver(w))
	if _, err := h.server.RefreshAgent(t.Context()); err != nil {
		t.Fatal(err)
	}
	frames := h.captureWithRunID("asdf qwerty zxcv", "run-01")
	itemID := frames[2].Data["value"].(map[string]any)["inboxItemId"].(string)
	asked := *h.inbox(testUser)[0].AgentRun
	if asked.Outcome != brainwire.OutcomeMisunderstood {
		t.Fatalf("first run %+v", asked)
	}

	answer := func(text string, round int, runID string) []frame {
		b, _ := json.Marshal(map[string]any{"inbox_item_id": itemID, "follow_up_text": text, "follow_up_round": round, "run_id": runID})
		return h.readStream(h.post("/api/capture/follow-up", "application/json", string(b)))
	}
	if f := answer("qwerty again", 1, "run-02"); f[2].Data["type"] != "MISUNDERSTOOD" {
		t.Fatalf("round 1:\n%s", payloads(f))
	}
	second := *h.inbox(testUser)[0].AgentRun
	if f := answer("I meant: call my friend Sam about his birthday party", 2, "run-03"); f[2].Data["type"] != "CLASSIFIED" {
		t.Fatalf("round 2:\n%s", payloads(f))
	}
	_, corr := w.seen()
	if len(corr) != 2 {
		t.Fatalf("corrections %+v", corr)
	}
	if c := corr[0]; c.Kind != brainwire.CorrectionFollowUp || c.Run != asked || c.Round != 1 || c.Outcome != brainwire.OutcomeMisunderstood ||
		c.Bucket != "" || c.Resolved() || c.FollowUpRunID != "run-02" || c.ItemID != itemID {
		t.Errorf("round 1 correction %+v", c)
	}
	if second.RunID != "run-02" {
		t.Fatalf("after round 1 the item records %+v", second)
	}
	if c := corr[1]; c.Run != second || c.Round != 2 || c.Outcome != brainwire.OutcomeClassified || c.Bucket != "People" || !c.Resolved() {
		t.Errorf("round 2 correction %+v", c)
	}
	if run := h.inbox(testUser)[0].AgentRun; run.RunID != "run-03" || run.Bucket != "People" {
		t.Errorf("resolved item records %+v", run)
	}
}

// TestAgentDescriptionSurvivesFailedRefreshes checks that a failed describe
// keeps the last description, that a new version is picked up, and that
// the health check's read of the agent is the refresh.
func TestAgentDescriptionSurvivesFailedRefreshes(t *testing.T) {
	agent := func(version string) ft.Response {
		return ft.JSON(200, map[string]any{"id": "asst_test", "object": "assistant", "name": "Classifier", "model": "gpt-4o",
			"instructions": "Classify.", "tools": []any{}, "metadata": map[string]any{"version": version}})
	}
	h := newHarness(t, []ft.Call{
		ft.Expect("GET /assistants/asst_test", agent("v1")),
		ft.Expect("GET /assistants/asst_test", ft.Error(500, "server_error", "try later")),
		ft.Expect("GET /assistants/asst_test", agent("v2")),
	})
	got, err := h.server.RefreshAgent(t.Context())
	if err != nil || got.Version != "v1" || got.Name != "Classifier" {
		t.Fatalf("first describe: %+v, %v", got, err)
	}
	// The health check reads the agent once and fails: the version stays.
	r := h.do("GET", "/health", "", "", "", "")
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("health with the agent failing: %d %s", r.status, r.body)
	}
	if v := h.server.Agent().Version; v != "v1" {
		t.Fatalf("after a failed refresh the version is %q, want v1 kept", v)
	}
	got, err = h.server.RefreshAgent(t.Context())
	if err != nil || got.Version != "v2" {
		t.Fatalf("third describe: %+v, %v", got, err)
	}
}

// TestInstructionsOverride checks that a server told to run other
// instructions sends them with every run and names their version.
func TestInstructionsOverride(t *testing.T) {
	const instr = "Classify captures.\nAdmin cues: gym"
	c := classify(ft.FileCaptureCall("call_1", "gym", "Admin", 0.9, "classified"), 2)
	w := &recorder{}
	h := newHarness(t, []ft.Call{
		ft.Expect("GET /assistants/asst_test", ft.JSON(200, map[string]any{"id": "asst_test", "object": "assistant", "model": "gpt-4o",
			"instructions": "Classify captures.", "metadata": map[string]any{"version": "v1"}})),
		ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)),
		ft.Expect(submitPath(), ft.Stream(c.Continuation()...)),
	}, func(cfg *server.Config) { cfg.Instructions = instr; cfg.EvalRunID = "eval-1" }, withObserver(w))
	agent, err := h.server.RefreshAgent(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if agent.Version == "v1" || agent.Version != brainwire.HashInstructions(instr, nil, "gpt-4o") || agent.Instructions != instr {
		t.Fatalf("agent with the override: %+v", agent)
	}
	h.capture("Go to the gym after work")
	if got := h.up.Requests()[1].Body["instructions"]; got != instr {
		t.Errorf("run instructions %v, want the override", got)
	}
	if !strings.Contains(string(h.up.Requests()[1].RawBody), `"assistant_id":"asst_test"`) {
		t.Errorf("run body %s", h.up.Requests()[1].RawBody)
	}
	if caps, _ := w.seen(); len(caps) != 1 || caps[0].EvalRunID != "eval-1" || caps[0].Agent.Version != agent.Version {
		t.Errorf("captures %+v: want eval-1 and the override's version", caps)
	}
}
