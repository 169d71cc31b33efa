package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

// TestCheckReportsADiff: when the output no longer matches a golden file,
// Check names the file and shows the changed lines. The goldens are made
// here from the replay itself, so the test holds whatever the adapter
// currently sends.
func TestCheckReportsADiff(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixturesDir, "classified-people.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "classified-people.json")
	os.WriteFile(path, b, 0o644)
	fx, err := recorder.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Run(t.Context(), fx, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ssePath, telPath := replay.GoldenPaths(path)
	os.WriteFile(ssePath, res.SSE, 0o644)
	os.WriteFile(telPath, res.Summary.Text(), 0o644)
	if report, err := replay.Check(t.Context(), path, replay.Options{}); err != nil || report != "" {
		t.Fatalf("matching goldens: report %q, err %v", report, err)
	}

	os.WriteFile(ssePath, []byte(strings.Replace(string(res.SSE), `"type":"STEP_END"`, `"type":"STEP_ENDED"`, 1)), 0o644)
	os.WriteFile(telPath, []byte(strings.Replace(string(res.Summary.Text()), "outcome: classified", "outcome: unresolved", 1)), 0o644)
	report, err := replay.Check(t.Context(), path, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--- " + ssePath, "+++ replay",
		`-data: {"type":"STEP_ENDED","stepName":"Classifying"}`,
		`+data: {"type":"STEP_END","stepName":"Classifying"}`,
		"--- " + telPath, "-outcome: unresolved", "+outcome: classified",
	} {
		if !strings.Contains(report, want+"\n") {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
