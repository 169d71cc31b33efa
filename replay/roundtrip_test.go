package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

// recordAgainstSimulator records one capture against a fresh simulator
// with a static bearer token.
func recordAgainstSimulator(t *testing.T, token string, setup *replay.Request, req replay.Request) *replay.Recording {
	t.Helper()
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	t.Cleanup(sim.Close)
	rec, err := replay.Record(t.Context(), replay.RecordConfig{
		Agent: wiring.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "v1", func(next http.RoundTripper) http.RoundTripper {
			return foundry.NewStaticTokenTransport(token, next)
		}),
		Secrets:     []string{token},
		Upstream:    "simulator",
		Transcriber: replay.StaticTranscriber{Text: "Call mom about her birthday on Sunday"},
		Dir:         t.TempDir(),
	}, setup, req)
	if err != nil {
		t.Fatalf("recording: %v", err)
	}
	return rec
}

// TestRecordReplayRoundTrip records captures against the simulator and
// replays each fixture from its file: the phone must get the same bytes,
// and the file must hold no trace of the token or of a SAS signature.
func TestRecordReplayRoundTrip(t *testing.T) {
	const token = "tok-3f9c2a77e1b04d5c9a8e6f1d2b3c4a5e"
	cases := []struct {
		name  string
		setup *replay.Request
		req   replay.Request
	}{
		{name: "text", req: replay.Request{Kind: brainwire.KindText,
			// The token and a SAS URL in the capture itself must not reach the file either.
			Text: "Call mom about " + token + " https://x.blob.core.windows.net/a?sv=2024&sig=abcDEF%2B123 on Sunday"}},
		{name: "two-calls", req: replay.Request{Kind: brainwire.KindText, Text: "Lunch with Sarah to plan the launch deck #two-calls"}},
		{name: "invalid-bucket", req: replay.Request{Kind: brainwire.KindText, Text: "Pay the electricity bill #invalid-bucket"}},
		{name: "voice", req: replay.Request{Kind: brainwire.KindVoice, Audio: []byte("RIFF....WAVEfmt "), AudioName: "memo.wav", AudioType: "audio/wav"}},
		{name: "follow-up",
			setup: &replay.Request{Kind: brainwire.KindText, Text: "hmm zzkx"},
			req:   replay.Request{Kind: brainwire.KindFollowUp, Text: "I meant call my sister about her birthday", FollowUpRound: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := recordAgainstSimulator(t, token, c.setup, c.req)
			if got.Response.Status != http.StatusOK {
				t.Fatalf("live capture answered %d: %s", got.Response.Status, got.Response.Body)
			}
			path := filepath.Join(t.TempDir(), "fixture.json")
			if err := recorder.WriteFile(path, got.Fixture); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{token, "abcDEF%2B123", "Bearer"} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("the fixture contains %q", secret)
				}
			}
			fx, err := recorder.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := replay.Run(context.Background(), fx, replay.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if !bytes.Equal(res.SSE, got.Response.Body) {
				t.Errorf("replayed SSE differs from the live capture:\n%s",
					replay.Diff(string(got.Response.Body), string(res.SSE), "live", "replay"))
			}
			if !strings.HasSuffix(string(res.SSE), "\n\n") || !strings.Contains(string(res.SSE), `"type":"COMPLETE"`) {
				t.Errorf("replay did not complete:\n%s", res.SSE)
			}
			t.Logf("%s", res.SSE)
		})
	}
}

// TestLiveFollowUpReplays: a follow-up recorded live (by serve) knows
// neither the follow-up round nor the inbox item's text; what the recorder
// infers from the run is enough to replay it to the same bytes.
func TestLiveFollowUpReplays(t *testing.T) {
	got := recordAgainstSimulator(t, "tok-3f9c2a77e1b04d5c9a8e6f1d2b3c4a5e",
		&replay.Request{Kind: brainwire.KindText, Text: "hmm zzkx"},
		replay.Request{Kind: brainwire.KindFollowUp, Text: "I meant call my sister about her birthday", FollowUpRound: 1})
	fx := got.Fixture
	var out struct {
		ItemID string `json:"item_id"`
	}
	if err := json.Unmarshal(fx.Tools[0].Output, &out); err != nil || out.ItemID == "" {
		t.Fatalf("file_capture output %s", fx.Tools[0].Output)
	}
	fx.Capture.FollowUp = &recorder.FollowUp{Item: recorder.InboxSeed{ID: out.ItemID, UpstreamThreadID: fx.Capture.UpstreamThreadID}}
	res, err := replay.Run(t.Context(), fx, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.SSE, got.Response.Body) {
		t.Errorf("replay differs:\n%s", replay.Diff(string(got.Response.Body), string(res.SSE), "live", "replay"))
	}
}
