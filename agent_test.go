package brainwire_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/brainwire/brainwire"
)

func TestHashInstructions(t *testing.T) {
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "file_capture"}}]`)
	base := brainwire.HashInstructions("Classify captures.", tools, "gpt-4o")
	if len(base) != 12 {
		t.Fatalf("hash %q: want 12 hex characters", base)
	}
	if again := brainwire.HashInstructions("Classify captures.", tools, "gpt-4o"); again != base {
		t.Errorf("hash not stable: %s then %s", base, again)
	}
	tests := []struct {
		name         string
		instructions string
		tools        json.RawMessage
		model        string
		same         bool
	}{
		{"tools reformatted", "Classify captures.", json.RawMessage("[\n  {\"type\":\"function\",\n \"function\":{\"name\":\"file_capture\"}}\n]"), "gpt-4o", true},
		{"instructions changed", "Classify captures carefully.", tools, "gpt-4o", false},
		{"model changed", "Classify captures.", tools, "gpt-4.1", false},
		{"tools changed", "Classify captures.", json.RawMessage(`[]`), "gpt-4o", false},
		{"no tools", "Classify captures.", nil, "gpt-4o", false},
		// Moving bytes across fields must not give the same hash.
		{"field boundary", "Classify captures.gpt", tools, "-4o", false},
		{"malformed tools hash as they are", "Classify captures.", json.RawMessage(`[{`), "gpt-4o", false},
	}
	for _, tc := range tests {
		got := brainwire.HashInstructions(tc.instructions, tc.tools, tc.model)
		if (got == base) != tc.same {
			t.Errorf("%s: hash %s vs %s, same = %v, want %v", tc.name, got, base, got == base, tc.same)
		}
	}
}

func TestAgentVersion(t *testing.T) {
	a := brainwire.AgentInfo{ID: "asst_1", Name: "Classifier", Model: "gpt-4o", Instructions: "Classify."}
	if !(brainwire.AgentInfo{}).IsZero() || a.IsZero() {
		t.Error("IsZero wrong")
	}
	hashed := a.Described("")
	if hashed.InstructionsHash == "" || hashed.Version != hashed.InstructionsHash {
		t.Errorf("without a declared version, Version %q should be the hash %q", hashed.Version, hashed.InstructionsHash)
	}
	declared := a.Described("7")
	if declared.Version != "7" || declared.InstructionsHash != hashed.InstructionsHash {
		t.Errorf("declared version: %+v", declared)
	}
	// Instructions from a file replace the agent's, and the declared
	// version no longer names them.
	over := declared.WithInstructions("Classify, and prefer Admin for errands.")
	if over.Version == "7" || over.Version != over.InstructionsHash || over.InstructionsHash == declared.InstructionsHash {
		t.Errorf("override: %+v", over)
	}
	if over.ID != "asst_1" || over.Model != "gpt-4o" {
		t.Errorf("override lost the agent: %+v", over)
	}
	// The same file gives the version the agent will have once it is
	// deployed with those instructions (and no declared version).
	deployed := brainwire.AgentInfo{ID: "asst_1", Model: "gpt-4o", Instructions: "Classify, and prefer Admin for errands."}.Described("")
	if deployed.Version != over.Version {
		t.Errorf("deployed version %s, eval version %s: want the same", deployed.Version, over.Version)
	}
	if same := declared.WithInstructions(""); same.Version != declared.Version || same.Instructions != declared.Instructions {
		t.Errorf("empty override changed the agent: %+v", same)
	}
}

func TestRunTraceInContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := brainwire.RunTraceFrom(ctx); ok {
		t.Error("empty context has a run trace")
	}
	ref := brainwire.TraceRef{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}
	got, ok := brainwire.RunTraceFrom(brainwire.WithRunTrace(ctx, ref))
	if !ok || got != ref || got.IsZero() {
		t.Errorf("got %+v, %v", got, ok)
	}
}

func TestOutcomeOfStatus(t *testing.T) {
	for status, want := range map[string]brainwire.Outcome{
		brainwire.StatusClassified:    brainwire.OutcomeClassified,
		brainwire.StatusPending:       brainwire.OutcomeLowConfidence,
		brainwire.StatusMisunderstood: brainwire.OutcomeMisunderstood,
		brainwire.StatusUnresolved:    brainwire.OutcomeUnresolved,
		"filed":                       "",
	} {
		if got := brainwire.OutcomeOfStatus(status); got != want {
			t.Errorf("OutcomeOfStatus(%q) = %q, want %q", status, got, want)
		}
	}
	for _, o := range brainwire.Outcomes {
		want := o == brainwire.OutcomeClassified || o == brainwire.OutcomeLowConfidence
		if o.Resolved() != want {
			t.Errorf("%s.Resolved() = %v", o, o.Resolved())
		}
	}
}

func TestAgentRunOnTheItem(t *testing.T) {
	run := &brainwire.AgentRun{RunID: "run-1", AgentVersion: "v1", Outcome: brainwire.OutcomeMisunderstood, Bucket: "Ideas",
		Confidence: 0.2, TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}
	f := filing(brainwire.StatusMisunderstood)
	f.AgentRun = run
	it := f.NewItem()
	if it.AgentRun == nil || *it.AgentRun != *run || it.AgentRun == run {
		t.Fatalf("new item's run %+v: want a copy of %+v", it.AgentRun, run)
	}
	if tr := it.AgentRun.Trace(); tr.TraceID != run.TraceID || tr.SpanID != run.SpanID {
		t.Errorf("Trace() = %+v", tr)
	}
	if tr := (*brainwire.AgentRun)(nil).Trace(); !tr.IsZero() {
		t.Errorf("nil run's trace %+v", tr)
	}

	// A follow-up's filing replaces the run; a refile without one keeps it.
	g := filing(brainwire.StatusClassified)
	g.InboxItemID, g.NewInboxID = it.ID, ""
	g.AgentRun = &brainwire.AgentRun{RunID: "run-2", Outcome: brainwire.OutcomeClassified, Bucket: "People"}
	if got := g.Refile(it).AgentRun; got == nil || got.RunID != "run-2" {
		t.Errorf("refile with a run: %+v", got)
	}
	g.AgentRun = nil
	if got := g.Refile(it).AgentRun; got == nil || got.RunID != "run-1" || got == it.AgentRun {
		t.Errorf("refile without a run: %+v, want a copy of the item's", got)
	}

	f.AgentRun = &brainwire.AgentRun{Confidence: math.NaN()}
	if err := f.Validate(); brainwire.ErrorCode(err) != brainwire.EInvalid {
		t.Errorf("NaN run confidence: %v, want invalid", err)
	}
}

// recordingObserver records the corrections it is told.
type recordingObserver struct{ got []brainwire.Correction }

func (o *recordingObserver) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, nil
}

func (o *recordingObserver) Correction(_ context.Context, c brainwire.Correction) {
	o.got = append(o.got, c)
}

type plainObserver struct{}

func (plainObserver) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, nil
}

func TestObserversForwardCorrections(t *testing.T) {
	a, b := &recordingObserver{}, &recordingObserver{}
	os := brainwire.Observers{a, plainObserver{}, b}
	var co brainwire.CorrectionObserver = os
	c := brainwire.Correction{Kind: brainwire.CorrectionRecategorize, ItemID: "i1", Bucket: "Ideas",
		Run: brainwire.AgentRun{Outcome: brainwire.OutcomeClassified, Bucket: "People"}}
	co.Correction(context.Background(), c)
	if len(a.got) != 1 || len(b.got) != 1 || a.got[0].ItemID != "i1" {
		t.Errorf("forwarded %v and %v", a.got, b.got)
	}
}

func TestCorrectionVerdicts(t *testing.T) {
	run := func(o brainwire.Outcome, b string) brainwire.AgentRun {
		return brainwire.AgentRun{Outcome: o, Bucket: b}
	}
	tests := []struct {
		name             string
		c                brainwire.Correction
		agreed, resolved bool
	}{
		{"moved", brainwire.Correction{Kind: brainwire.CorrectionRecategorize, Run: run(brainwire.OutcomeClassified, "People"), Bucket: "Ideas"}, false, false},
		{"confirmed", brainwire.Correction{Kind: brainwire.CorrectionRecategorize, Run: run(brainwire.OutcomeLowConfidence, "Ideas"), Bucket: "Ideas"}, true, false},
		// A misunderstood capture's bucket is a guess: placing it there
		// is not agreeing with a filing.
		{"misunderstood guess", brainwire.Correction{Kind: brainwire.CorrectionRecategorize, Run: run(brainwire.OutcomeMisunderstood, "Ideas"), Bucket: "Ideas"}, false, false},
		{"follow-up filed", brainwire.Correction{Kind: brainwire.CorrectionFollowUp, Run: run(brainwire.OutcomeMisunderstood, "Ideas"), Bucket: "Admin", Outcome: brainwire.OutcomeClassified}, false, true},
		{"follow-up misunderstood again", brainwire.Correction{Kind: brainwire.CorrectionFollowUp, Run: run(brainwire.OutcomeMisunderstood, "Ideas"), Outcome: brainwire.OutcomeMisunderstood}, false, false},
	}
	for _, tc := range tests {
		if tc.c.Agreed() != tc.agreed || tc.c.Resolved() != tc.resolved {
			t.Errorf("%s: Agreed %v Resolved %v, want %v %v", tc.name, tc.c.Agreed(), tc.c.Resolved(), tc.agreed, tc.resolved)
		}
	}
}
