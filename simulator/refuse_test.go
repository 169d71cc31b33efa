package simulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/simulator"
)

// TestRefuseOnEveryFace: under #refuse:S:2 the call that starts a run,
// and then the one that answers its tool calls, are each refused twice
// with status S, the face's error body and a short wait, before they are
// served; nothing is made before then. A call is known by its
// Idempotency-Key, else by its body. Stats counts the refusals.
func TestRefuseOnEveryFace(t *testing.T) {
	t.Parallel()
	type answer func() (int, http.Header, []byte)
	foundry := []string{"Authorization", "Bearer x"}
	cases := []struct {
		face, text, want string
		status           int
		// run sets the face up on c and returns the run's two calls, the
		// second valid once the first was served, and what the face holds.
		run func(c *client, text string) (start, outputs answer, held func() int)
	}{
		{"threads", "#refuse:503:2 Pay the electricity bill", `"code":"service_unavailable"`, http.StatusServiceUnavailable,
			func(c *client, text string) (answer, answer, func() int) {
				path := simulator.ProjectPath + "/threads/runs?api-version=v1"
				var submit string
				var outputs map[string]any
				start := func() (int, http.Header, []byte) {
					status, h, b := c.do(http.MethodPost, path, map[string]any{"assistant_id": testAgent, "stream": true,
						"thread": map[string]any{"messages": []any{userMessage(text)}}, "tools": json.RawMessage(testTools)}, foundry...)
					if status == http.StatusOK {
						run, calls := pendingCalls(t, parseSSE(t, bytes.NewReader(b)))
						submit = simulator.ProjectPath + "/threads/" + run.ThreadID + "/runs/" + run.ID + "/submit_tool_outputs?api-version=v1"
						outputs = map[string]any{"tool_outputs": toolOutputs(map[string]string{calls[0].ID: `{"ok":true}`}), "stream": true}
					}
					return status, h, b
				}
				held := func() int {
					_, _, b := c.do(http.MethodGet, simulator.ProjectPath+"/threads?api-version=v1", nil, foundry...)
					var list struct{ Data []json.RawMessage }
					_ = json.Unmarshal(b, &list)
					return len(list.Data)
				}
				return start, func() (int, http.Header, []byte) { return c.do(http.MethodPost, submit, outputs, foundry...) }, held
			}},
		{"responses", "#refuse:429:2 Pay the electricity bill", `"code":"rate_limit_exceeded"`, http.StatusTooManyRequests,
			func(c *client, text string) (answer, answer, func() int) {
				path := simulator.ProjectPath + "/openai/v1/responses"
				var next map[string]any
				start := func() (int, http.Header, []byte) {
					status, h, b := c.do(http.MethodPost, path, map[string]any{"model": "m", "input": userInput(text), "tools": responsesTools},
						append(foundry, "Idempotency-Key", "k1")...)
					var served struct {
						ID     string
						Output []struct {
							CallID string `json:"call_id"`
						}
					}
					if status == http.StatusOK && json.Unmarshal(b, &served) == nil {
						next = map[string]any{"model": "m", "previous_response_id": served.ID, "tools": responsesTools,
							"input": []any{map[string]any{"type": "function_call_output", "call_id": served.Output[len(served.Output)-1].CallID, "output": `{"ok":true}`}}}
					}
					return status, h, b
				}
				outputs := func() (int, http.Header, []byte) {
					return c.do(http.MethodPost, path, next, append(foundry, "Idempotency-Key", "k2")...)
				}
				return start, outputs, func() int { return 0 }
			}},
		{"adk", "#refuse:502:2 Pay the electricity bill", `{"detail":"The service received`, http.StatusBadGateway,
			func(c *client, text string) (answer, answer, func() int) {
				session := c.session()
				var next map[string]any
				start := func() (int, http.Header, []byte) {
					status, h, b := c.do(http.MethodPost, "/run_sse", runBody(session, textMessage(text)))
					for line := range strings.SplitSeq(string(b), "\n") {
						var ev adkwire.Event
						if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Content != nil {
							if calls, _ := adkCalls(ev); len(calls) > 0 {
								next = runBody(session, functionResponses(adkFiled(calls[0], "Admin", "classified")))
							}
						}
					}
					return status, h, b
				}
				outputs := func() (int, http.Header, []byte) { return c.do(http.MethodPost, "/run_sse", next) }
				held := func() int {
					_, _, b := c.do(http.MethodGet, "/apps/brainwire_classifier/users/u-1/sessions/"+session, nil)
					var s adkwire.Session
					_ = json.Unmarshal(b, &s)
					return len(s.Events)
				}
				return start, outputs, held
			}},
	}
	for _, tc := range cases {
		t.Run(tc.face, func(t *testing.T) {
			c, _ := newSim(t, simulator.Config{})
			start, outputs, held := tc.run(c, tc.text)
			check := func(what string, call answer) {
				for i := range 3 {
					status, h, b := call()
					if i == 2 {
						if status != http.StatusOK {
							t.Fatalf("%s, attempt 3: %d %s; want it served", what, status, b)
						}
						return
					}
					if status != tc.status || h.Get("retry-after-ms") != "5" || h.Get("Retry-After") != "1" || !strings.Contains(string(b), tc.want) {
						t.Fatalf("%s, attempt %d: %d retry-after-ms %q Retry-After %q %s; want %d, a wait of 5 ms and %s",
							what, i+1, status, h.Get("retry-after-ms"), h.Get("Retry-After"), b, tc.status, tc.want)
					}
					if n := held(); what == "start" && n != 0 {
						t.Fatalf("%d made after a refusal; want none", n)
					}
				}
			}
			check("start", start)
			check("tool outputs", outputs)
			var stats simulator.Stats
			_, _, b := c.do(http.MethodGet, simulator.StatsPath, nil)
			if err := json.Unmarshal(b, &stats); err != nil || stats.Refused[fmt.Sprint(tc.status)] != 4 || len(stats.Refused) != 1 {
				t.Errorf("refused %v; want %d: 4", stats.Refused, tc.status)
			}
		})
	}
}
