package simulator_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/recordings"
	"github.com/brainwire/brainwire/simulator"
)

// The recorded streams of one real run, in the order they were received.
func loadRecordings(t *testing.T) [][]frame {
	t.Helper()
	var out [][]frame
	for _, name := range recordings.Names {
		frames := parseSSE(t, bytes.NewReader(recordings.Read(t, name)))
		checkFraming(t, frames)
		out = append(out, frames)
	}
	return out
}

// runStatusFor is the status a run event's object carries.
var runStatusFor = map[string]string{
	"thread.run.created":         "queued",
	"thread.run.queued":          "queued",
	"thread.run.in_progress":     "in_progress",
	"thread.run.requires_action": "requires_action",
	"thread.run.completed":       "completed",
	"thread.run.failed":          "failed",
	"thread.run.cancelling":      "cancelling",
	"thread.run.cancelled":       "cancelled",
}

func isRunEvent(name string) bool {
	return strings.HasPrefix(name, "thread.run.") && !strings.HasPrefix(name, "thread.run.step.")
}

// checkRunRules checks the ordering rules the recordings follow on the
// streams of one run (the create stream, then one per submit_tool_outputs):
// each ends with done, requires_action comes right before done, after its
// tool step's deltas, and the deltas add up to the required calls; a
// continuation opens with the tool step's completion (with outputs), queued
// and in_progress; message deltas add up to the completed message; and the
// completed run's usage is the sum of its steps' usage.
func checkRunRules(t *testing.T, streams [][]frame) {
	t.Helper()
	var runID, threadID string
	var stepSum foundrywire.Usage
	for si, frames := range streams {
		if len(frames) == 0 || frames[len(frames)-1].Event != "done" {
			t.Errorf("stream %d: does not end with done: %v", si, names(frames))
			continue
		}
		if si > 0 {
			got := names(frames[:min(3, len(frames))])
			want := []string{"thread.run.step.completed", "thread.run.queued", "thread.run.in_progress"}
			if !slices.Equal(got, want) {
				t.Errorf("stream %d: continuation opens with %v, want %v", si, got, want)
			}
		}
		toolStep, msgID := "", ""
		var text strings.Builder
		args := map[int]*strings.Builder{}
		callIDs := map[int]string{}
		for i, f := range frames {
			if f.Event == "done" && i != len(frames)-1 {
				t.Errorf("stream %d: done at %d of %d", si, i, len(frames))
			}
			switch {
			case isRunEvent(f.Event):
				r := decodeAs[foundrywire.Run](t, f)
				if runID == "" {
					runID, threadID = r.ID, r.ThreadID
				}
				if r.Object != "thread.run" || r.ID != runID || r.ThreadID != threadID {
					t.Errorf("stream %d event %d %s: object %q id %q thread %q", si, i, f.Event, r.Object, r.ID, r.ThreadID)
				}
				if want, ok := runStatusFor[f.Event]; ok && r.Status != want {
					t.Errorf("stream %d %s: status %q, want %q", si, f.Event, r.Status, want)
				}
				switch f.Event {
				case "thread.run.requires_action":
					if i+2 != len(frames) {
						t.Errorf("stream %d: requires_action is not right before done", si)
					}
					if toolStep == "" {
						t.Errorf("stream %d: requires_action without a tool step", si)
					}
					calls := r.RequiredAction.SubmitToolOutputs.ToolCalls
					if len(calls) != len(args) {
						t.Errorf("stream %d: %d required calls, %d streamed", si, len(calls), len(args))
					}
					for idx, c := range calls {
						if args[idx] == nil || args[idx].String() != c.Function.Arguments || callIDs[idx] != c.ID {
							t.Errorf("stream %d call %d: streamed %q (id %s), required %q (id %s)", si, idx, args[idx], callIDs[idx], c.Function.Arguments, c.ID)
						}
					}
				case "thread.run.completed":
					if r.Usage == nil {
						t.Errorf("stream %d: completed run without usage", si)
					} else if *r.Usage != stepSum || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
						t.Errorf("stream %d: run usage %+v, steps add up to %+v", si, *r.Usage, stepSum)
					}
				}
			case f.Event == "thread.run.step.created":
				st := decodeAs[foundrywire.Step](t, f)
				if st.Object != "thread.run.step" || st.Status != "in_progress" || st.Usage != nil || st.RunID != runID {
					t.Errorf("stream %d: step created %+v", si, st)
				}
				if st.Type == "tool_calls" {
					if len(deref(st.StepDetails.ToolCalls)) != 0 {
						t.Errorf("stream %d: new tool step already has calls", si)
					}
					toolStep = st.ID
					args = map[int]*strings.Builder{}
					callIDs = map[int]string{}
				}
			case f.Event == "thread.run.step.delta":
				var d struct {
					ID     string `json:"id"`
					Object string `json:"object"`
					Delta  struct {
						StepDetails struct {
							ToolCalls []struct {
								Index    *int                       `json:"index"`
								ID       string                     `json:"id"`
								Type     string                     `json:"type"`
								Function map[string]json.RawMessage `json:"function"`
							} `json:"tool_calls"`
						} `json:"step_details"`
					} `json:"delta"`
				}
				if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
					t.Fatal(err)
				}
				if d.ID != toolStep || d.Object != "thread.run.step.delta" {
					t.Errorf("stream %d: step delta for %q (open tool step %q)", si, d.ID, toolStep)
				}
				for _, c := range d.Delta.StepDetails.ToolCalls {
					if c.Index == nil || c.Type != "function" {
						t.Fatalf("stream %d: tool call delta without index or type: %s", si, f.Data)
					}
					var frag string
					_ = json.Unmarshal(c.Function["arguments"], &frag)
					if c.ID != "" {
						var name string
						_ = json.Unmarshal(c.Function["name"], &name)
						out, hasOut := c.Function["output"]
						if args[*c.Index] != nil || name == "" || frag != "" || !hasOut || string(out) != "null" {
							t.Errorf("stream %d: first chunk of call %d is %s", si, *c.Index, f.Data)
						}
						args[*c.Index] = &strings.Builder{}
						callIDs[*c.Index] = c.ID
						continue
					}
					if args[*c.Index] == nil {
						t.Errorf("stream %d: fragment for call %d before its first chunk", si, *c.Index)
						continue
					}
					if _, named := c.Function["name"]; named {
						t.Errorf("stream %d: a later chunk repeats the name: %s", si, f.Data)
					}
					args[*c.Index].WriteString(frag)
				}
			case f.Event == "thread.run.step.completed":
				st := decodeAs[foundrywire.Step](t, f)
				if st.Status != "completed" || st.Usage == nil {
					t.Errorf("stream %d: completed step %+v", si, st)
					continue
				}
				stepSum = stepSum.Add(*st.Usage)
				for _, c := range deref(st.StepDetails.ToolCalls) {
					if c.Function.Output == nil {
						t.Errorf("stream %d: completed tool call %s has no output", si, c.ID)
					}
				}
			case f.Event == "thread.message.created":
				m := decodeAs[foundrywire.Message](t, f)
				if m.Status != "in_progress" || len(m.Content) != 0 || m.Role != "assistant" {
					t.Errorf("stream %d: message created %+v", si, m)
				}
				msgID = m.ID
				text.Reset()
			case f.Event == "thread.message.delta":
				d := decodeAs[foundrywire.MessageDelta](t, f)
				if d.ID != msgID {
					t.Errorf("stream %d: delta for %q, open message %q", si, d.ID, msgID)
				}
				for _, c := range d.Delta.Content {
					text.WriteString(c.Text.Value)
				}
			case f.Event == "thread.message.completed":
				m := decodeAs[foundrywire.Message](t, f)
				if m.ID != msgID || m.Status != "completed" || len(m.Content) != 1 || m.Content[0].Text.Value != text.String() {
					t.Errorf("stream %d: completed message %q does not match its deltas %q", si, m.Content, text.String())
				}
			}
		}
	}
}

// keysOf returns the sorted top-level keys of a JSON object, reading the
// hand-edited agent_id of one recording as the wire's assistant_id.
func keysOf(t *testing.T, data string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range m {
		if k == "agent_id" {
			k = "assistant_id"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// objectKind groups events by the object their payload is.
func objectKind(event string) string {
	switch {
	case event == "thread.run.step.delta", event == "thread.message.delta", event == "done", event == "error", event == "thread.created":
		return event
	case strings.HasPrefix(event, "thread.run.step."):
		return "step"
	case isRunEvent(event):
		return "run"
	case strings.HasPrefix(event, "thread.message."):
		return "message"
	}
	return event
}

// referenceKeys collects the fields of each object kind in the recordings.
func referenceKeys(t *testing.T, streams [][]frame) map[string][]string {
	t.Helper()
	ref := map[string][]string{}
	for _, frames := range streams {
		for _, f := range frames {
			kind := objectKind(f.Event)
			if kind == "done" || kind == "thread.run.step.delta" || kind == "thread.message.delta" {
				continue // deltas vary per chunk; their fields are checked by checkRunRules
			}
			keys := keysOf(t, f.Data)
			if prev, ok := ref[kind]; ok && !slices.Equal(prev, keys) {
				t.Fatalf("recordings disagree on %s fields: %v vs %v", kind, prev, keys)
			}
			ref[kind] = keys
		}
	}
	return ref
}

func TestRecordingsFollowTheRules(t *testing.T) {
	streams := loadRecordings(t)
	checkRunRules(t, streams)
	ref := referenceKeys(t, streams)
	for _, kind := range []string{"run", "step", "message"} {
		if len(ref[kind]) == 0 {
			t.Errorf("no %s object in the recordings", kind)
		}
	}
}

// TestSimulatorMatchesRecordings runs the simulator through the paths the
// recordings show (tool rounds, parallel calls, a closing message) and
// holds its streams to the same rules and object fields.
func TestSimulatorMatchesRecordings(t *testing.T) {
	ref := referenceKeys(t, loadRecordings(t))
	c, _ := newSim(t, simulator.Config{})

	flows := map[string]func() [][]frame{
		"classified": func() [][]frame {
			s1 := c.createAndRun("Finish the launch deck before the deadline")
			r, calls := pendingCalls(t, s1)
			return [][]frame{s1, c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"bucket":"Projects","confidence":0.95,"item_id":"i1"}`})}
		},
		"two calls": func() [][]frame {
			s1 := c.createAndRun("#two-calls Call mom about her birthday and finish the deck")
			r, calls := pendingCalls(t, s1)
			out := map[string]string{}
			for _, call := range calls {
				out[call.ID] = `{"bucket":"People","confidence":0.9,"item_id":"i1"}`
			}
			return [][]frame{s1, c.submit(r.ThreadID, r.ID, out)}
		},
		"retry": func() [][]frame {
			s1 := c.createAndRun("#invalid-bucket Pay the electricity bill")
			r, calls := pendingCalls(t, s1)
			s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"error":"invalid_bucket","message":"unknown bucket \"Misc\""}`})
			_, calls = pendingCalls(t, s2)
			s3 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"bucket":"Admin","confidence":0.8,"item_id":"i1"}`})
			return [][]frame{s1, s2, s3}
		},
		"voice": func() [][]frame {
			s1 := c.createAndRun("audio: https://blob.example/audio/a1.m4a")
			r, calls := pendingCalls(t, s1)
			s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"text":"Renew the car insurance"}`})
			_, calls = pendingCalls(t, s2)
			s3 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"bucket":"Admin","confidence":0.8,"item_id":"i1"}`})
			return [][]frame{s1, s2, s3}
		},
	}
	for name, flow := range flows {
		t.Run(name, func(t *testing.T) {
			streams := flow()
			checkRunRules(t, streams)
			for _, frames := range streams {
				for _, f := range frames {
					kind := objectKind(f.Event)
					want, ok := ref[kind]
					if !ok {
						continue
					}
					if got := keysOf(t, f.Data); !slices.Equal(got, want) {
						t.Errorf("%s fields:\n got %v\nwant %v", f.Event, got, want)
					}
				}
			}
		})
	}
}
