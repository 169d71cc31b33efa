package aguitest

import "testing"

// The checker must fail what the client fails, or the tests using it prove
// nothing.
func TestVerifyRejectsWhatTheClientRejects(t *testing.T) {
	start, finish := `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
	cases := map[string][]string{
		"no RUN_STARTED":          {`{"type":"STEP_STARTED","stepName":"s"}`, finish},
		"no terminal event":       {start, `{"type":"STEP_STARTED","stepName":"s"}`},
		"event after the end":     {start, finish, `{"type":"CUSTOM","name":"n","value":1}`},
		"content before start":    {start, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`, finish},
		"message left open":       {start, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`, finish},
		"step left open":          {start, `{"type":"STEP_STARTED","stepName":"s"}`, finish},
		"tool call left open":     {start, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f"}`, finish},
		"reasoning role wrong":    {start, `{"type":"REASONING_MESSAGE_START","messageId":"m","role":"assistant"}`, finish},
		"null optional field":     {start, `{"type":"RUN_ERROR","message":"m","code":null}`},
		"custom without value":    {start, `{"type":"CUSTOM","name":"n"}`, finish},
		"unknown event type":      {start, `{"type":"THINKING_START"}`, finish},
		"finish step never begun": {start, `{"type":"STEP_FINISHED","stepName":"s"}`, finish},
	}
	for name, frames := range cases {
		if Verify(frames) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFrames(t *testing.T) {
	got, err := Frames("data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":2}\n\n")
	if err != nil || len(got) != 2 || got[0] != `{"a":1}` || got[1] != `{"b":2}` {
		t.Fatalf("%q, %v", got, err)
	}
	for _, bad := range []string{"data: {}\r\n\r\n", "event: x\ndata: {}\n\n", "data: {}\ndata: {}\n\n", "data: {\n\n", "data: {}\n"} {
		if _, err := Frames(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
