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
// in any protocol, Check names the file and shows the changed lines. The goldens are made
// here by Goldens, so the test holds whatever the adapter
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
	goldens, err := replay.Goldens(t.Context(), fx, path, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range goldens {
		os.WriteFile(g.Path, g.Data, 0o644)
	}
	if report, err := replay.Check(t.Context(), path, replay.Options{}); err != nil || report != "" {
		t.Fatalf("matching goldens: report %q, err %v", report, err)
	}

	ssePath, telPath, aguiPath, v1Path := goldens[0].Path, goldens[1].Path, goldens[2].Path, goldens[3].Path
	os.WriteFile(ssePath, []byte(strings.Replace(string(goldens[0].Data), `"type":"STEP_END"`, `"type":"STEP_ENDED"`, 1)), 0o644)
	os.WriteFile(telPath, []byte(strings.Replace(string(goldens[1].Data), "outcome: classified", "outcome: unresolved", 1)), 0o644)
	os.WriteFile(aguiPath, []byte(strings.Replace(string(goldens[2].Data), `"type":"STEP_FINISHED"`, `"type":"STEP_ENDED"`, 1)), 0o644)
	os.Remove(v1Path)
	report, err := replay.Check(t.Context(), path, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--- " + ssePath, "+++ replay",
		`-data: {"type":"STEP_ENDED","stepName":"Classifying"}`,
		`+data: {"type":"STEP_END","stepName":"Classifying"}`,
		"--- " + telPath, "-outcome: unresolved", "+outcome: classified",
		"--- " + aguiPath, `+data: {"type":"STEP_FINISHED","stepName":"Classifying"}`,
		v1Path + ": no golden file (record the fixture again, or run the golden suite with GOLDIE_UPDATE=1)",
	} {
		if !strings.Contains(report, want+"\n") {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
