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
	streams := map[replay.Protocol][]byte{}
	var res *replay.Result
	for _, p := range replay.Protocols {
		r, err := replay.Run(t.Context(), fx, replay.Options{Protocol: p})
		if err != nil {
			t.Fatal(err)
		}
		streams[p] = r.SSE
		os.WriteFile(replay.GoldenPath(path, p), r.SSE, 0o644)
		if p == replay.CaptureV2 {
			res = r
		}
	}
	ssePath, telPath := replay.GoldenPaths(path)
	os.WriteFile(telPath, res.Summary.Text(), 0o644)
	if report, err := replay.Check(t.Context(), path, replay.Options{}); err != nil || report != "" {
		t.Fatalf("matching goldens: report %q, err %v", report, err)
	}

	os.WriteFile(ssePath, []byte(strings.Replace(string(res.SSE), `"type":"STEP_END"`, `"type":"STEP_ENDED"`, 1)), 0o644)
	os.WriteFile(telPath, []byte(strings.Replace(string(res.Summary.Text()), "outcome: classified", "outcome: unresolved", 1)), 0o644)
	aguiPath := replay.GoldenPath(path, replay.AGUI)
	os.WriteFile(aguiPath, []byte(strings.Replace(string(streams[replay.AGUI]), `"type":"STEP_FINISHED"`, `"type":"STEP_ENDED"`, 1)), 0o644)
	os.Remove(replay.GoldenPath(path, replay.V1))
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
		replay.GoldenPath(path, replay.V1) + ": no golden file (record the fixture again, or run the golden suite with GOLDIE_UPDATE=1)",
	} {
		if !strings.Contains(report, want+"\n") {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
