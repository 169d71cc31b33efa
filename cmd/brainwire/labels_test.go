package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

// readLabels reads a corpus export-labels wrote as eval does (which refuses
// an id twice), and the meta of each case by id.
func readLabels(t *testing.T, path string) ([]eval.Case, map[string]map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := eval.ReadCorpus(f)
	if err != nil {
		t.Fatalf("eval cannot read the labels: %v", err)
	}
	metas := map[string]map[string]any{}
	for _, c := range cases {
		var m map[string]any
		if err := json.Unmarshal(c.Meta, &m); err != nil {
			t.Fatal(err)
		}
		metas[c.ID] = m
	}
	return cases, metas
}

// TestExportLabelsOneCasePerItem exports more labels than a page holds,
// from two users, some corrected twice: every labelled item is one case,
// expecting the bucket the person chose last, with where it came from; an
// unresolved capture a person filed is one too, and a labelled item
// without text is left out and counted.
func TestExportLabelsOneCasePerItem(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	n := 0
	file := func(user, text string, source brainwire.CaptureKind, status, bucket string, traced bool) string {
		n++
		id := fmt.Sprintf("item-%03d", n)
		run := &brainwire.AgentRun{RunID: "run-" + id, AgentVersion: "v7", InstructionsHash: "3f2a9c1b04de", Model: "gpt-4o",
			Outcome: brainwire.OutcomeOfStatus(status), Bucket: bucket, Confidence: 0.8}
		if traced {
			run.TraceID, run.SpanID = "0af7651916cd43dd8448eb211c80319c", fmt.Sprintf("b7ad6b71692%05d", n)
		}
		f := brainwire.Filing{UserID: user, NewInboxID: id, NewRecordID: "rec-" + id, RawText: text, Source: source,
			Status: status, AgentRun: run, Now: base.Add(time.Duration(n) * time.Minute),
			Classification: brainwire.Classification{Bucket: bucket, Confidence: 0.8, ClassifiedBy: "Classifier"}}
		if _, err := st.File(ctx, f); err != nil {
			t.Fatal(err)
		}
		return id
	}
	recategorize := func(user, id, bucket string, at time.Time) {
		if _, err := st.Recategorize(ctx, user, id, bucket, "rec2-"+id, server.ClassifiedByUser, at); err != nil {
			t.Fatal(err)
		}
	}
	firstWord, lastWord := base.Add(24*time.Hour), base.Add(48*time.Hour)
	var twice []string
	for i := range 110 {
		id := file("alice", fmt.Sprintf("capture %d", i), brainwire.KindText, brainwire.StatusClassified, brainwire.BucketIdeas, true)
		recategorize("alice", id, brainwire.BucketAdmin, firstWord)
		if i%10 == 0 {
			recategorize("alice", id, brainwire.BucketPeople, lastWord)
			twice = append(twice, id)
		}
	}
	file("alice", "the agent's own", brainwire.KindText, brainwire.StatusClassified, brainwire.BucketIdeas, true) // no label
	unresolved := file("alice", "hmm #no-tool", brainwire.KindText, brainwire.StatusUnresolved, "", true)
	recategorize("alice", unresolved, brainwire.BucketProjects, firstWord)
	untraced := file("bob", "Lunch with Sarah", brainwire.KindVoice, brainwire.StatusPending, brainwire.BucketPeople, false)
	recategorize("bob", untraced, brainwire.BucketPeople, firstWord)
	textless := file("bob", "", brainwire.KindVoice, brainwire.StatusUnresolved, "", false)
	recategorize("bob", textless, brainwire.BucketAdmin, firstWord)
	st.Close()

	out := filepath.Join(dir, "labels.jsonl")
	var stderr strings.Builder
	if err := run(ctx, []string{"export-labels", "-o", out}, envFunc(map[string]string{"BRAINWIRE_DATA_DIR": dir}), &strings.Builder{}, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "export-labels: 112 labels from 2 users; 1 labelled item without text left out\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	cases, metas := readLabels(t, out)
	if len(cases) != 112 {
		t.Fatalf("%d cases, want one per labelled item: 110 + the unresolved one + bob's", len(cases))
	}
	byID := map[string]eval.Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, id := range twice {
		if c := byID[id]; c.ExpectedBucket != brainwire.BucketPeople || metas[id]["labelled_at"] != lastWord.Format(time.RFC3339) {
			t.Errorf("item %s corrected twice: %+v, want the later bucket", id, c)
		}
	}
	wantMeta := map[string]map[string]any{
		twice[0]: {"user": "alice", "label": "recategorized", "source": "text",
			"captured_at": base.Add(time.Minute).Format(time.RFC3339), "labelled_at": lastWord.Format(time.RFC3339),
			"run_id": "run-" + twice[0], "trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169200001",
			"agent_version": "v7", "instructions_hash": "3f2a9c1b04de", "model": "gpt-4o", "agent_outcome": "classified", "agent_bucket": "Ideas"},
		unresolved: {"user": "alice", "label": "recategorized", "source": "text",
			"captured_at": base.Add(112 * time.Minute).Format(time.RFC3339), "labelled_at": firstWord.Format(time.RFC3339),
			"run_id": "run-" + unresolved, "trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7ad6b7169200112",
			"agent_version": "v7", "instructions_hash": "3f2a9c1b04de", "model": "gpt-4o", "agent_outcome": "unresolved"},
		// Nothing traced bob's run: no trace ids, the rest as ever.
		untraced: {"user": "bob", "label": "confirmed", "source": "voice",
			"captured_at": base.Add(113 * time.Minute).Format(time.RFC3339), "labelled_at": firstWord.Format(time.RFC3339),
			"run_id": "run-" + untraced, "agent_version": "v7", "instructions_hash": "3f2a9c1b04de", "model": "gpt-4o",
			"agent_outcome": "low_confidence", "agent_bucket": "People"},
	}
	for id, want := range wantMeta {
		got, _ := json.Marshal(metas[id])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("meta of %s:\n%s\nwant\n%s", id, got, w)
		}
	}
	if c := byID[unresolved]; c.Text != "hmm #no-tool" || c.ExpectedBucket != brainwire.BucketProjects {
		t.Errorf("the filed unresolved capture: %+v", c)
	}
	// -user takes one user's.
	stdout, err := runCmd(t, map[string]string{"BRAINWIRE_DATA_DIR": dir}, "export-labels", "-user", "bob")
	if err != nil || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"id":"`+untraced+`"`) {
		t.Errorf("bob's labels: %v\n%s", err, stdout)
	}
}

// TestExportLabelsOnlyReads: a data directory or database that is not
// there is an error, and nothing is created, not even the output file.
func TestExportLabelsOnlyReads(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "labels.jsonl")
	for name, dataDir := range map[string]string{
		"missing directory": filepath.Join(dir, "dta"),
		"no database":       dir,
	} {
		var stderr strings.Builder
		err := run(t.Context(), []string{"export-labels", "-o", out}, envFunc(map[string]string{"BRAINWIRE_DATA_DIR": dataDir}), &strings.Builder{}, &stderr)
		want := "no database at " + filepath.Join(dataDir, "brainwire.db")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, want)
		}
		if _, usage := err.(usageError); usage || strings.Contains(stderr.String(), "labels from") {
			t.Errorf("%s: %v (stderr %q): want a failure, not a usage error or a count", name, err, stderr.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("export-labels created %v", entries)
	}
}

// TestExportLabelsOfServedCaptures runs the whole path on each store: the
// phone's captures through serve (telemetry off), an unresolved one filed
// by the person, another item corrected twice, then export-labels: one
// case per labelled item, the person's latest bucket, no trace ids since
// nothing traced the runs.
func TestExportLabelsOfServedCaptures(t *testing.T) {
	for _, store := range []string{"sqlite", "cosmos"} {
		t.Run(store, func(t *testing.T) {
			env := map[string]string{"BRAINWIRE_DATA_DIR": t.TempDir()}
			if store == "cosmos" {
				env = cosmosEnv(startCosmos(t), "labels")
			}
			r, err := startReplica(t, env, true)
			if err != nil {
				t.Fatal(err)
			}
			capture := func(text, want string) string {
				a := call(t, r, "POST", "/api/capture", fmt.Sprintf(`{"text":%q}`, text))
				typ, v := outcome(t, a.body)
				id, _ := v["inboxItemId"].(string)
				if typ != want || id == "" {
					t.Fatalf("capture %q: %s %v, want %s with an item", text, typ, v, want)
				}
				return id
			}
			recategorize := func(id, bucket string) {
				if a := call(t, r, "PATCH", "/api/inbox/"+id+"/recategorize", fmt.Sprintf(`{"bucket":%q}`, bucket)); a.status != 200 {
					t.Fatalf("recategorize %s: %d %s", id, a.status, a.body)
				}
			}
			twice := capture("Call mom about her birthday on Sunday", "CLASSIFIED")
			unresolved := capture("Pay the water bill #no-tool", "UNRESOLVED")
			capture("Renew the passport", "CLASSIFIED") // the agent's: no label
			recategorize(twice, brainwire.BucketIdeas)
			recategorize(twice, brainwire.BucketPeople)
			recategorize(unresolved, brainwire.BucketAdmin)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}

			out := filepath.Join(t.TempDir(), "labels.jsonl")
			if _, err := runCmd(t, env, "export-labels", "-o", out); err != nil {
				t.Fatal(err)
			}
			cases, metas := readLabels(t, out)
			got := map[string]string{}
			for _, c := range cases {
				got[c.ID] = c.ExpectedBucket + " " + metas[c.ID]["label"].(string) + " " + fmt.Sprint(metas[c.ID]["agent_outcome"])
				if _, traced := metas[c.ID]["trace_id"]; traced || metas[c.ID]["run_id"] == nil || metas[c.ID]["agent_version"] == nil {
					t.Errorf("meta of %s: %v", c.ID, metas[c.ID])
				}
			}
			want := map[string]string{twice: "People confirmed classified", unresolved: "Admin recategorized unresolved"}
			if len(got) != len(want) || got[twice] != want[twice] || got[unresolved] != want[unresolved] {
				t.Errorf("labels %v, want %v", got, want)
			}
		})
	}
}
