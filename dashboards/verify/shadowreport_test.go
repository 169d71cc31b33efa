package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestShadowReportTruth reads the store the workload's replicas shared
// with `brainwire shadow-report`, as a tuner would once the traffic is
// in, and compares the report with the workload's truth: the same trials
// the dashboard's shadow row counts (every capture serve-a filed, half of
// serve-b2's), labelled by the person's last recategorize.
func TestShadowReportTruth(t *testing.T) {
	tr := shared.truth
	cmd := exec.CommandContext(t.Context(), shared.bin, "shadow-report", "-json", "-confirm-after", "0")
	cmd.Env = append(baseEnv(), "BRAINWIRE_DATA_DIR="+filepath.Join(shared.dir, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("shadow-report: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Candidates []struct {
			Version                                string
			Production                             []string `json:"production_versions"`
			Pairs, Agreed, Labelled, Recategorized int
			ProductionCorrect                      int `json:"production_correct"`
			CandidateCorrect                       int `json:"candidate_correct"`
			CandidateOnly                          int `json:"candidate_only_right"`
			ProductionOnly                         int `json:"production_only_right"`
			Disagreements                          []struct {
				ItemID string `json:"item_id"`
			}
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("shadow-report -json: %v\n%.500s", err, stdout.String())
	}
	if len(rep.Candidates) != 1 || rep.Candidates[0].Version != tr.candidate {
		t.Fatalf("shadow-report: %d candidates, want the one %s", len(rep.Candidates), tr.candidate)
	}
	c := rep.Candidates[0]

	var want struct{ pairs, agreed, labelled, prodRight, candRight, candOnly, prodOnly int }
	var disagree, gotDisagree, versions []string
	for _, s := range tr.shadowTrials {
		if !slices.Contains(versions, s.version) {
			versions = append(versions, s.version)
		}
		want.pairs++
		if s.agree() {
			want.agreed++
		} else {
			disagree = append(disagree, s.itemID)
		}
		if s.label == "" {
			continue
		}
		want.labelled++
		p, k := s.production == s.label, s.candidate == s.label
		want.prodRight += b2i(p)
		want.candRight += b2i(k)
		want.candOnly += b2i(k && !p)
		want.prodOnly += b2i(p && !k)
	}
	for _, d := range c.Disagreements {
		gotDisagree = append(gotDisagree, d.ItemID)
	}
	slices.Sort(disagree)
	slices.Sort(gotDisagree)
	got := fmt.Sprintf("pairs %d agreed %d labelled %d (%d recategorized) right: production %d candidate %d; only candidate %d, only production %d; disagreements %v",
		c.Pairs, c.Agreed, c.Labelled, c.Recategorized, c.ProductionCorrect, c.CandidateCorrect, c.CandidateOnly, c.ProductionOnly, gotDisagree)
	wantText := fmt.Sprintf("pairs %d agreed %d labelled %d (%d recategorized) right: production %d candidate %d; only candidate %d, only production %d; disagreements %v",
		want.pairs, want.agreed, want.labelled, want.labelled, want.prodRight, want.candRight, want.candOnly, want.prodOnly, disagree)
	if got != wantText {
		t.Errorf("shadow-report:\n got %s\nwant %s", got, wantText)
	}
	t.Logf("shadow-report: %s", got)
	// serve-a runs the built-in instructions; serve-b2, which shadowed
	// half its captures, the errands instructions.
	if !slices.Equal(sorted(c.Production), sorted(versions)) {
		t.Errorf("production versions %v, want %v", c.Production, versions)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
