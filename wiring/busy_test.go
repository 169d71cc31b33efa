package wiring_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/scripttest"
)

// TestABusyServiceIsToldInEveryProtocol refuses a capture's first
// streamed call with 429 asking for an hour: the client of every protocol
// hears at once that the service is busy, and for how long it asked:
// capture-v2's ERROR and v1's RUN_ERROR in a field of their own, AG-UI's
// RUN_ERROR in its metadata (the AG-UI client drops a field of its own it
// does not know).
func TestABusyServiceIsToldInEveryProtocol(t *testing.T) {
	const runTimeout = 20 * time.Second
	routes := []struct{ name, path, body, want string }{
		{"capture-v2", "/api/capture", `{"text":"Call Sam"}`,
			`{"type":"ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":3600}`},
		{"v1", "/api/ag-ui", `{"messages":[{"id":"m1","role":"user","content":"Call Sam"}]}`,
			`{"type":"RUN_ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":3600}`},
		{"AG-UI", "/api/agui", `{"threadId":"t-1","runId":"r-1","state":{},` +
			`"messages":[{"id":"u1","role":"user","content":"Call Sam"}],"tools":[],"context":[],"forwardedProps":{}}`,
			`{"type":"RUN_ERROR","message":"The agent service is busy; try again later","code":"busy","metadata":{"retryAfterSeconds":3600}}`},
	}
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			i := slices.IndexFunc(u.calls, func(c scripttest.Call) bool {
				return strings.HasSuffix(c.Path, "/responses") || strings.HasSuffix(c.Path, "/threads/runs") || strings.HasSuffix(c.Path, "/run_sse")
			})
			refuse := scripttest.Call{Method: u.calls[i].Method, Path: u.calls[i].Path,
				Response: scripttest.JSON(429, `{"error":{"message":"Rate limit is exceeded.","code":"rate_limit_exceeded"}}`).WithHeader("Retry-After", "3600")}
			capture := append(slices.Clone(u.calls[:i]), refuse)
			var script []scripttest.Call
			for range routes {
				script = append(script, capture...)
			}
			agent, requests := u.serve(t, script)
			phone := phoneOn(t, openStore(t), agent, fastRetries, runTimeout)
			for n, route := range routes {
				start := time.Now()
				got := postStream(t, phone, route.path, route.body)
				if took := time.Since(start); took > runTimeout/2 {
					t.Errorf("%s: the stream ended %v after it began; the run timeout is %v", route.name, took.Round(time.Millisecond), runTimeout)
				}
				if !strings.Contains(got, "data: "+route.want+"\n\n") {
					t.Errorf("%s: the client got:\n%s\nwant %s", route.name, got, route.want)
				}
				if sent, want := len(requests()), (n+1)*len(capture); sent != want {
					t.Errorf("%s: %d requests after %d captures; want %d, the refused call sent once each", route.name, sent, n+1, want)
				}
			}
		})
	}
}
