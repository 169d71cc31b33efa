package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/responses/responseswire"
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
	var call responseswire.FunctionCallItem
	for _, raw := range served["output"].([]any) {
		if o := raw.(map[string]any); o["type"] == "function_call" {
			call = responseswire.FunctionCallItem{CallID: o["call_id"].(string)}
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

// refusedAnswer checks an answer is a refusal with the wait the
// simulator asks for, its body holding want.
func refusedAnswer(t *testing.T, what string, status int, h http.Header, body []byte, wantStatus int, want string) {
	t.Helper()
	if status != wantStatus || h.Get("retry-after-ms") != "5" || h.Get("Retry-After") != "1" || !strings.Contains(string(body), want) {
		t.Fatalf("%s: %d retry-after-ms %q Retry-After %q %s; want %d, a wait of 5 ms and %s",
			what, status, h.Get("retry-after-ms"), h.Get("Retry-After"), body, wantStatus, want)
	}
}

// TestRefuseOnTheClassicFace: under #refuse:503:2 the thread-and-run
// create, and then its tool outputs, are each refused twice with the
// service's error body before they are served, and nothing is made
// before then; a run on an existing thread follows its new message's
// #refuse.
func TestRefuseOnTheClassicFace(t *testing.T) {
	c, sim := newSim(t, simulator.Config{})
	post := func(path string, body map[string]any) (int, http.Header, []byte) {
		t.Helper()
		resp := c.request(context.Background(), http.MethodPost, path, body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	threads := func() int {
		t.Helper()
		var list struct{ Data []json.RawMessage }
		c.call(http.MethodGet, "/threads", nil, http.StatusOK, &list)
		return len(list.Data)
	}
	first := map[string]any{"assistant_id": testAgent, "thread": map[string]any{"messages": []any{userMessage("#refuse:503:2 Pay the electricity bill")}},
		"tools": json.RawMessage(testTools), "stream": true}
	for i := range 2 {
		status, h, b := post("/threads/runs", first)
		refusedAnswer(t, fmt.Sprintf("create, attempt %d", i+1), status, h, b, http.StatusServiceUnavailable, `"code":"service_unavailable"`)
	}
	if n := threads(); n != 0 {
		t.Fatalf("%d threads after the refusals; want none", n)
	}
	run, calls := pendingCalls(t, c.stream("/threads/runs", first))
	outputs := map[string]any{"tool_outputs": toolOutputs(map[string]string{calls[0].ID: `{"ok":true}`}), "stream": true}
	submit := "/threads/" + run.ThreadID + "/runs/" + run.ID + "/submit_tool_outputs"
	for i := range 2 {
		status, h, b := post(submit, outputs)
		refusedAnswer(t, fmt.Sprintf("tool outputs, attempt %d", i+1), status, h, b, http.StatusServiceUnavailable, `"code":"service_unavailable"`)
	}
	if r := lastRun(t, c.stream(submit, outputs)); r.Status != "completed" {
		t.Fatalf("the run after its outputs: %s", r.Status)
	}

	next := map[string]any{"assistant_id": testAgent, "additional_messages": []any{userMessage("and the rent #refuse:429")},
		"tools": json.RawMessage(testTools), "stream": true}
	status, h, b := post("/threads/"+run.ThreadID+"/runs", next)
	refusedAnswer(t, "a run on the thread", status, h, b, http.StatusTooManyRequests, `"code":"rate_limit_exceeded"`)
	pendingCalls(t, c.stream("/threads/"+run.ThreadID+"/runs", next))
	if got := sim.Stats().Refused; got["503"] != 4 || got["429"] != 1 {
		t.Errorf("refused %v; want 503: 4, 429: 1", got)
	}
}

// TestRefuseOnTheADKFace: under #refuse:502:2 a run_sse with the text,
// and then the one with its function responses, are each refused twice
// ({"detail": ...}, with the wait) before they are served, and the
// session takes nothing before then.
func TestRefuseOnTheADKFace(t *testing.T) {
	c := newADK(t, simulator.Config{})
	session := c.session()
	events := func() int {
		t.Helper()
		_, _, b := c.do(http.MethodGet, "/apps/brainwire_classifier/users/u-1/sessions/"+session, nil)
		var s adkSession
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("session %s: %v", b, err)
		}
		return len(s.Events)
	}
	first := runBody(session, textMessage("#refuse:502:2 Pay the electricity bill"))
	for i := range 2 {
		status, h, b := c.do(http.MethodPost, "/run_sse", first)
		refusedAnswer(t, fmt.Sprintf("the text, attempt %d", i+1), status, h, b, http.StatusBadGateway, `{"detail":"The service received`)
	}
	if n := events(); n != 0 {
		t.Fatalf("the session has %d events after the refusals; want none", n)
	}
	evs, _ := c.run(first)
	call := evs[len(evs)-1].calls()[0]
	next := runBody(session, functionResponses(adkFiled(call, "Admin", "classified")))
	for i := range 2 {
		status, h, b := c.do(http.MethodPost, "/run_sse", next)
		refusedAnswer(t, fmt.Sprintf("the function response, attempt %d", i+1), status, h, b, http.StatusBadGateway, `"detail"`)
	}
	if evs, errFrame := c.run(next); errFrame != "" || len(evs) == 0 {
		t.Fatalf("the function response served: %v %s", evs, errFrame)
	}
}
