package replay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/wiring"
)

// adkServerApp is the app testenv/adk-agents serves: its directory's name.
const adkServerApp = "brainwire_classifier"

// TestADKServer runs the captures of the fixtures recorded from Google
// ADK's own API server (fixtures/adk-server-*.json) again, live, against
// that server: `adk api_server` of @google/adk-devtools, installed under
// testenv/, serving the Classifier of testenv/adk-agents, whose model is a
// script. Each capture goes through the real server path as `brainwire
// record` runs it, and the phone must get exactly the fixture's golden
// stream: the recording still says what the real server does, and
// brainwire still reads what it sends.
func TestADKServer(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixturesDir, "adk-server-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 8 {
		t.Fatalf("%d fixtures recorded from the ADK API server, want at least 8", len(paths))
	}
	base := startADKServer(t)

	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx, err := recorder.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			setup, req, transcriber := liveCapture(fx)
			got, err := replay.Record(t.Context(), replay.RecordConfig{
				Agent:       wiring.ADK(base, adkServerApp, nil),
				Upstream:    "adk",
				Transcriber: transcriber,
				Dir:         t.TempDir(),
				RunTimeout:  30 * time.Second,
			}, setup, req)
			if err != nil {
				t.Fatal(err)
			}
			// The server chose a new session and new call ids; the
			// goldens name the recorded ones.
			recorded := recordedIDs(t, got.Fixture, fx)
			sseGolden, telGolden := replay.GoldenPath(path, replay.CaptureV2), strings.TrimSuffix(path, ".json")+replay.TelemetryGoldenSuffix
			compare(t, "the phone's stream", sseGolden, recorded.Replace(string(got.Response.Body)))

			// The live recording replays, to the same bytes, and its
			// telemetry (reasoning chunks, usage, tool calls, upstream
			// states) is the golden's.
			res, err := replay.Run(t.Context(), got.Fixture, replay.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("the live recording does not replay: %v", err)
			}
			if !bytes.Equal(res.SSE, got.Response.Body) {
				t.Errorf("the live recording replays to other bytes:\n%s", replay.Diff(string(got.Response.Body), string(res.SSE), "live", "replayed"))
			}
			compare(t, "the telemetry", telGolden, recorded.Replace(string(res.Summary.Text())))
		})
	}
}

// startADKServer starts the ADK API server on the agents of testenv and
// returns its URL once it serves the Classifier. The agent is plain ESM
// JavaScript, loaded as it is: bundling it first (the CLI's default) would
// only add seconds.
func startADKServer(t *testing.T) string {
	t.Helper()
	npmtest.Node(t)
	agents, err := filepath.Abs(filepath.Join("..", "testenv", "adk-agents"))
	if err != nil {
		t.Fatal(err)
	}
	srv := npmtest.Start(t, "adk", "api_server", "--host", "127.0.0.1", "--port", "{port}",
		"--session_service_uri", "memory://", "--compile", "false", "--bundle", "false", agents)
	base := "http://" + srv.Addr
	// The server loads its agents on the first request that needs them.
	resp, err := http.Get(base + "/list-apps")
	if err != nil {
		t.Fatalf("ADK API server: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var apps []string
	if json.Unmarshal(b, &apps) != nil || len(apps) != 1 || apps[0] != adkServerApp {
		t.Fatalf("ADK API server: /list-apps answered %d %s, want [%q]", resp.StatusCode, b, adkServerApp)
	}
	return base
}

// liveCapture returns the phone's requests that make a fixture's capture
// again, as `brainwire record` made them: a follow-up answers the
// misunderstood capture made first (its setup), and a voice capture's
// audio is transcribed as it was.
func liveCapture(fx *recorder.Fixture) (setup *replay.Request, req replay.Request, tr brainwire.Transcriber) {
	req = replay.RequestFor(fx)
	switch req.Kind {
	case brainwire.KindFollowUp:
		setup = &replay.Request{Kind: brainwire.KindText, Text: fx.Capture.FollowUp.Item.RawText}
		req.InboxItemID = "" // the item setup files
	case brainwire.KindVoice:
		req.Audio = replay.SilentWAV(16000)
		for _, call := range fx.Tools {
			var out struct {
				Text string `json:"text"`
			}
			if call.Name == brainwire.ToolTranscribeAudio && json.Unmarshal(call.Output, &out) == nil {
				tr = replay.StaticTranscriber{Text: out.Text}
			}
		}
	}
	return setup, req, tr
}

// compare fails the test when got is not the golden file's content.
func compare(t *testing.T, what, golden, got string) {
	t.Helper()
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s, recorded from the ADK API server:\n%s", what, filepath.Base(golden), replay.Diff(string(want), got, "golden", "live"))
	}
}

// recordedIDs maps the ids the server chose live (the session, the
// function calls) to those it chose when fx was recorded.
func recordedIDs(t *testing.T, live, fx *recorder.Fixture) *strings.Replacer {
	t.Helper()
	pairs := []string{sessionOf(live), sessionOf(fx)}
	if len(live.Tools) != len(fx.Tools) {
		t.Fatalf("%d tool calls live, %d recorded", len(live.Tools), len(fx.Tools))
	}
	for i := range live.Tools {
		pairs = append(pairs, live.Tools[i].CallID, fx.Tools[i].CallID)
	}
	return strings.NewReplacer(pairs...)
}

// sessionOf returns the ADK session of a recorded capture: the one its
// first request created, or the one a follow-up continued.
func sessionOf(fx *recorder.Fixture) string {
	if fx.Capture.UpstreamThreadID != "" {
		return fx.Capture.UpstreamThreadID
	}
	for _, ex := range fx.Exchanges {
		if ex.Request.Method != http.MethodPost || !strings.HasSuffix(ex.Request.Path, "/sessions") || ex.Response == nil {
			continue
		}
		var s struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(ex.Response.BodyBytes(), &s) == nil && s.ID != "" {
			return s.ID
		}
	}
	return "(no session)"
}
