package simulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/simulator"
)

// TestRefuseRefusesEachCallOfTheRun: under #refuse:429:2 each call that
// creates a response of the run is refused twice, with the service's
// error body and a short retry-after-ms, then served; its tool outputs'
// call too, under its own key. The refusals are counted in Stats.
func TestRefuseRefusesEachCallOfTheRun(t *testing.T) {
	srv := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	defer srv.Close()
	post := func(key string, body map[string]any) (*http.Response, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+responsesPath+"/responses", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer x")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, out
	}
	first := map[string]any{"model": "gpt-test", "input": userInput("#refuse:429:2 Pay the electricity bill"), "tools": responsesTools}
	var served map[string]any
	for i, key := range []string{"k1", "k1", "k1"} {
		resp, body := post(key, first)
		if i < 2 {
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("retry-after-ms") != "5" ||
				!strings.Contains(string(body), `"code":"rate_limit_exceeded"`) {
				t.Fatalf("attempt %d: %s retry-after-ms %q %s; want 429, retry-after-ms 5 and rate_limit_exceeded",
					i+1, resp.Status, resp.Header.Get("retry-after-ms"), body)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("attempt 3: %s %s; want it served", resp.Status, body)
		}
		if err := json.Unmarshal(body, &served); err != nil {
			t.Fatal(err)
		}
	}
	var call fnCall
	for _, raw := range served["output"].([]any) {
		if o := raw.(map[string]any); o["type"] == "function_call" {
			call = fnCall{CallID: o["call_id"].(string)}
		}
	}
	if call.CallID == "" {
		t.Fatalf("no function call in %v", served)
	}
	next := map[string]any{"model": "gpt-test", "previous_response_id": served["id"], "tools": responsesTools,
		"input": []any{map[string]any{"type": "function_call_output", "call_id": call.CallID, "output": `{"ok":true}`}}}
	for i := range 3 {
		resp, body := post("k2", next)
		if want := i == 2; (resp.StatusCode == http.StatusOK) != want {
			t.Fatalf("tool outputs, attempt %d: %s %s", i+1, resp.Status, body)
		}
	}
	var stats simulator.Stats
	resp, err := http.Get(srv.URL + simulator.StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if stats.Refused["429"] != 4 || len(stats.Refused) != 1 {
		t.Errorf("refused %v; want 429: 4", stats.Refused)
	}
}
