// Package aguitest checks AG-UI 1.0 streams in Go, for tests that cannot
// run the real client: it holds a stream to the rules @ag-ui/client 1.0's
// schemas and verifyEvents enforce. The Node test in cmd/brainwire runs
// the real client against the server; this is the quick, everywhere check.
package aguitest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Verify checks a stream's frames (their JSON) against the rules @ag-ui/client 1.0's
// verifyEvents and schemas enforce (the Node test runs the real client on
// served streams): RUN_STARTED first, one terminal event last, messages,
// tool calls and steps opened before use and closed before RUN_FINISHED,
// required fields present, no nulls.
func Verify(frames []string) error {
	required := map[string][]string{
		"RUN_STARTED": {"threadId", "runId"}, "RUN_FINISHED": {"threadId", "runId"}, "RUN_ERROR": {"message"},
		"STEP_STARTED": {"stepName"}, "STEP_FINISHED": {"stepName"},
		"TEXT_MESSAGE_START": {"messageId"}, "TEXT_MESSAGE_CONTENT": {"messageId", "delta"}, "TEXT_MESSAGE_END": {"messageId"},
		"TOOL_CALL_START": {"toolCallId", "toolCallName"}, "TOOL_CALL_ARGS": {"toolCallId", "delta"}, "TOOL_CALL_END": {"toolCallId"},
		"TOOL_CALL_RESULT": {"messageId", "toolCallId", "content"}, "CUSTOM": {"name", "value"}, "STATE_DELTA": {"delta"},
		"REASONING_START": {"messageId"}, "REASONING_MESSAGE_START": {"messageId", "role"}, "REASONING_MESSAGE_CONTENT": {"messageId", "delta"},
		"REASONING_MESSAGE_END": {"messageId"}, "REASONING_END": {"messageId"},
	}
	open := map[string]map[string]bool{"step": {}, "text": {}, "tool": {}, "reasoning": {}, "span": {}}
	opens := map[string][2]string{ // type -> kind, open|use|close
		"STEP_STARTED": {"step", "open"}, "STEP_FINISHED": {"step", "close"},
		"TEXT_MESSAGE_START": {"text", "open"}, "TEXT_MESSAGE_CONTENT": {"text", "use"}, "TEXT_MESSAGE_END": {"text", "close"},
		"TOOL_CALL_START": {"tool", "open"}, "TOOL_CALL_ARGS": {"tool", "use"}, "TOOL_CALL_END": {"tool", "close"},
		"REASONING_MESSAGE_START": {"reasoning", "open"}, "REASONING_MESSAGE_CONTENT": {"reasoning", "use"}, "REASONING_MESSAGE_END": {"reasoning", "close"},
		"REASONING_START": {"span", "open"}, "REASONING_END": {"span", "close"},
	}
	if len(frames) == 0 {
		return fmt.Errorf("empty stream")
	}
	for i, f := range frames {
		var ev map[string]any
		if err := json.Unmarshal([]byte(f), &ev); err != nil {
			return err
		}
		typ, _ := ev["type"].(string)
		need, known := required[typ]
		if !known {
			return fmt.Errorf("frame %d: unknown type %q", i, typ)
		}
		for k, v := range ev {
			if v == nil {
				return fmt.Errorf("frame %d: %s is null", i, k)
			}
		}
		for _, k := range need {
			if _, ok := ev[k]; !ok {
				return fmt.Errorf("frame %d: %s without %s", i, typ, k)
			}
		}
		if typ == "TEXT_MESSAGE_START" && ev["role"] != "assistant" || typ == "REASONING_MESSAGE_START" && ev["role"] != "reasoning" {
			return fmt.Errorf("frame %d: %s role %v", i, typ, ev["role"])
		}
		switch {
		case i == 0 && typ != "RUN_STARTED":
			return fmt.Errorf("first event is %s", typ)
		case i > 0 && typ == "RUN_STARTED":
			return fmt.Errorf("frame %d: a second RUN_STARTED", i)
		case (typ == "RUN_FINISHED" || typ == "RUN_ERROR") && i != len(frames)-1:
			return fmt.Errorf("frame %d: %s is not last", i, typ)
		case i == len(frames)-1 && typ != "RUN_FINISHED" && typ != "RUN_ERROR":
			return fmt.Errorf("last event is %s", typ)
		}
		if typ == "RUN_FINISHED" {
			for kind, ids := range open {
				if len(ids) > 0 {
					return fmt.Errorf("RUN_FINISHED with %s still open: %v", kind, ids)
				}
			}
		}
		if o, ok := opens[typ]; ok {
			key := "stepName"
			switch o[0] {
			case "tool":
				key = "toolCallId"
			case "text", "reasoning", "span":
				key = "messageId"
			}
			id, _ := ev[key].(string)
			ids := open[o[0]]
			switch o[1] {
			case "open":
				if ids[id] {
					return fmt.Errorf("frame %d: %s %q already open", i, typ, id)
				}
				ids[id] = true
			case "use", "close":
				if !ids[id] {
					return fmt.Errorf("frame %d: %s %q not open", i, typ, id)
				}
				if o[1] == "close" {
					delete(ids, id)
				}
			}
		}
	}
	return nil
}

// Frames splits a stream into its frames' JSON, checking the framing the
// client's parser needs: `data: <one line>` and a blank line, LF only.
// Comment frames (keep-alives) are skipped.
func Frames(stream string) ([]string, error) {
	if stream == "" {
		return nil, nil
	}
	if !strings.HasSuffix(stream, "\n\n") || strings.Contains(stream, "\r") {
		return nil, fmt.Errorf("stream is not LF-framed: %q", stream)
	}
	var out []string
	for _, f := range strings.Split(strings.TrimSuffix(stream, "\n\n"), "\n\n") {
		if strings.HasPrefix(f, ":") && !strings.Contains(f, "\n") {
			continue
		}
		p, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.Contains(p, "\n") || !json.Valid([]byte(p)) {
			return nil, fmt.Errorf("frame is not one data line of JSON: %q", f)
		}
		out = append(out, p)
	}
	return out, nil
}
