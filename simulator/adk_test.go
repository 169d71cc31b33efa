package simulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/simulator"
)

// do makes a plain call at the listener's root and returns its answer.
func (c *client) do(method, path string, body any, header ...string) (int, http.Header, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.(string)
		if !ok {
			raw, err := json.Marshal(body)
			if err != nil {
				c.t.Fatal(err)
			}
			b = string(raw)
		}
		rd = strings.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(c.base, simulator.ProjectPath)+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (c *client) session() string {
	c.t.Helper()
	status, _, b := c.do(http.MethodPost, "/apps/brainwire_classifier/users/u-1/sessions", map[string]any{})
	var s adkwire.Session
	if err := json.Unmarshal(b, &s); status != http.StatusOK || err != nil || s.ID == "" {
		c.t.Fatalf("creating a session: %d %s", status, b)
	}
	return s.ID
}

// adkCalls are an event's function calls, and the buckets they file.
func adkCalls(ev adkwire.Event) (calls []*adkwire.FunctionCall, buckets []string) {
	for _, p := range ev.Content.Parts {
		if p.FunctionCall != nil {
			var a fileArgs
			_ = json.Unmarshal(p.FunctionCall.Args, &a)
			calls, buckets = append(calls, p.FunctionCall), append(buckets, a.Bucket)
		}
	}
	return calls, buckets
}

func partial(ev adkwire.Event) bool { return ev.Partial != nil && *ev.Partial }

// run posts /run_sse and parses the stream strictly: "data: <json>" and
// a blank line per frame, nothing else.
func (c *client) run(body map[string]any) (events []adkwire.Event, errFrame string) {
	c.t.Helper()
	status, h, b := c.do(http.MethodPost, "/run_sse", body)
	if status != http.StatusOK {
		c.t.Fatalf("/run_sse: %d %s", status, b)
	}
	if ct := h.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		c.t.Fatalf("content type %q", ct)
	}
	for _, f := range parseSSE(c.t, bytes.NewReader(b)) {
		if f.Event != "" {
			c.t.Fatalf("frame %q %s", f.Event, f.Data)
		}
		if errFrame != "" {
			c.t.Fatalf("a frame after the error frame: %s", f.Data)
		}
		if strings.HasPrefix(f.Data, `{"error": `) {
			errFrame = f.Data
			continue
		}
		var ev adkwire.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil || ev.Content == nil {
			c.t.Fatalf("frame %s: %v", f.Data, err)
		}
		events = append(events, ev)
	}
	return events, errFrame
}

func runBody(session string, message map[string]any) map[string]any {
	return map[string]any{"appName": "brainwire_classifier", "userId": "u-1", "sessionId": session, "newMessage": message, "streaming": true}
}

func textMessage(s string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": s}}}
}

func functionResponses(rs ...map[string]any) map[string]any {
	parts := make([]any, len(rs))
	for i, r := range rs {
		parts[i] = map[string]any{"functionResponse": r}
	}
	return map[string]any{"role": "user", "parts": parts}
}

func adkFiled(call *adkwire.FunctionCall, bucket, status string) map[string]any {
	return map[string]any{"id": call.ID, "name": call.Name,
		"response": map[string]any{"bucket": bucket, "confidence": 0.9, "item_id": "item-1", "status": status}}
}

func TestADKFaults(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	t.Run("responses and text in one message", func(t *testing.T) {
		session := c.session()
		evs, _ := c.run(runBody(session, textMessage("Call mom")))
		calls, _ := adkCalls(evs[len(evs)-1])
		msg := functionResponses(adkFiled(calls[0], "People", "classified"))
		msg["parts"] = append(msg["parts"].([]any), map[string]any{"text": "and hi"})
		_, errFrame := c.run(runBody(session, msg))
		if !strings.Contains(errFrame, "Message cannot contain both function responses and text") {
			t.Fatalf("error frame %s", errFrame)
		}
	})
	t.Run("a response to no call", func(t *testing.T) {
		session := c.session()
		c.run(runBody(session, textMessage("Call mom")))
		_, errFrame := c.run(runBody(session, functionResponses(map[string]any{"id": "nope", "name": "file_capture", "response": map[string]any{}})))
		if !strings.Contains(errFrame, "Function call not found for function response ids: {'nope'}") {
			t.Fatalf("error frame %s", errFrame)
		}
	})
	t.Run("without streaming: the aggregated events only", func(t *testing.T) {
		body := runBody(c.session(), textMessage("Call mom about her birthday"))
		body["streaming"] = false
		evs, _ := c.run(body)
		if len(evs) != 1 || partial(evs[0]) {
			t.Fatalf("%d events: %v", len(evs), evs)
		}
	})
}

// TestADKSession: a session reads back with its events, as the server
// records them: each message it took from the user (author "user"), and
// each of the agent's events but the partial ones, in order, under the
// run's invocation id. Another user's session of that id is not found.
func TestADKSession(t *testing.T) {
	c, _ := newSim(t, simulator.Config{})
	session := c.session()
	get := func(user, id string) (int, adkwire.Session) {
		t.Helper()
		status, _, b := c.do(http.MethodGet, "/apps/brainwire_classifier/users/"+user+"/sessions/"+id, nil)
		var s adkwire.Session
		if status == http.StatusOK {
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("session %s: %v", b, err)
			}
		}
		return status, s
	}
	if status, s := get("u-1", session); status != http.StatusOK || s.ID != session || s.AppName != "brainwire_classifier" ||
		s.UserID != "u-1" || len(s.Events) != 0 {
		t.Fatalf("a new session: %d %+v", status, s)
	}
	evs, _ := c.run(runBody(session, textMessage("Call mom about her birthday")))
	calls, _ := adkCalls(evs[len(evs)-1])
	c.run(runBody(session, functionResponses(adkFiled(calls[0], "People", "classified"))))

	_, s := get("u-1", session)
	var got []string
	for _, ev := range s.Events {
		if partial(ev) || ev.InvocationID != evs[0].InvocationID {
			t.Errorf("a partial event, or one of another invocation, in the session: %+v", ev)
		}
		kind := ev.Author
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				kind += " call"
			case p.FunctionResponse != nil:
				kind += " response " + p.FunctionResponse.ID
			case p.Thought:
				kind += " thought"
			default:
				kind += " " + p.Text
			}
		}
		got = append(got, kind)
	}
	want := []string{"user Call mom about her birthday", "classifier thought call", "user response " + calls[0].ID, "classifier Filed to People."}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Events[1].ID != evs[len(evs)-1].ID {
		t.Errorf("the recorded model event is %v; the streamed one %v", s.Events[1].ID, evs[len(evs)-1].ID)
	}
	if status, _ := get("u-2", session); status != http.StatusNotFound {
		t.Errorf("another user's session: %d", status)
	}
	if status, _, b := c.do(http.MethodGet, "/apps/brainwire_classifier/users/u-1/sessions/nope", nil); status != http.StatusNotFound ||
		string(b) != `{"detail":"Session not found"}` {
		t.Errorf("an unknown session: %d %s", status, b)
	}
}
