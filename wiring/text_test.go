package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

// TestTextWithNothingVisibleIsRefused posts captures whose text draws
// nothing (blank symbols, default ignorable code points) to the server
// wired to the simulator: each is a 400 saying so, the agent is not
// called and nothing is filed. A newer emoji than the server's Unicode
// tables know is a capture like any other.
func TestTextWithNothingVisibleIsRefused(t *testing.T) {
	var calls atomic.Int64
	sim := simulator.New(simulator.Config{ChunkDelay: -1})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	st := openStore(t)
	project := srv.URL + simulator.ProjectPath
	agent := wiring.Responses(project+"/openai/v1", project, responses.Agent{Model: simulator.DefaultModel, Instructions: "Classify."}, staticAuth)
	phone := phoneOn(t, st, agent, fastRetries, 0)
	post := func(text string) (int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"text": text})
		req, _ := http.NewRequest(http.MethodPost, phone.URL+"/api/capture", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+phoneKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := phone.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, text := range []string{
		"\U0001d159",                                       // MUSICAL SYMBOL NULL NOTEHEAD
		"\U0001d159 \u2800\u3164\U0001d159",                // with the blank Braille pattern and the Hangul filler
		"\u115f\u1160\uffa0",                               // the other Hangul fillers
		"\u00ad\u180e\u2061\U0001d173\U0001bca0\U000e0020", // format characters
		"\ufe0f\U000e0100\u034f\u17b4",                     // variation selectors, a joiner, Khmer inherent vowels
	} {
		status, body := post(text)
		if status != http.StatusBadRequest || body != `{"detail":"text has no visible characters"}` {
			t.Errorf("%+q: %d %s; want 400 saying it has no visible characters", text, status, body)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the agent service was called %d times", n)
	}
	if page, err := st.ListInbox(context.Background(), "alice", brainwire.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("filed %d items (%v); want none", len(page.Items), err)
	}
	if status, body := post("\U0001fae9"); status != http.StatusOK || !strings.Contains(body, `"type":"MISUNDERSTOOD"`) {
		t.Errorf("🫩 (Unicode 16): %d %s; want it taken, and misunderstood", status, body)
	}
}
