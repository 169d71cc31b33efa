package foundrywire

import (
	"testing"

	"github.com/brainwire/brainwire/internal/jsonw"
)

func TestWritesTheServiceForm(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Float(1), `1.0`},
		{Float(0.7), `0.7`},
		{TextDelta("msg_1", "<a & b>", true), `{"id":"msg_1","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"<a & b>","annotations":[]}}]}}`},
		{TextDelta("msg_1", "é", false), `{"id":"msg_1","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"é"}}]}}`},
		{ToolDelta("step_1", CallStart(0, "call_1", "file_capture")), `{"id":"step_1","object":"thread.run.step.delta","delta":{"step_details":{"type":"tool_calls","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"file_capture","arguments":"","output":null}}]}}}`},
		{ToolDelta("step_1", CallArguments(0, `{"te`)), `{"id":"step_1","object":"thread.run.step.delta","delta":{"step_details":{"type":"tool_calls","tool_calls":[{"index":0,"type":"function","function":{"arguments":"{\"te"}}]}}}`},
	} {
		got, err := jsonw.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("jsonw.Marshal(%#v) = %s, %v; want %s", c.v, got, err, c.want)
		}
	}
	if got := string(AppendFrame([]byte("x"), DoneEvent, []byte(DoneData))); got != "xevent: done\ndata: [DONE]\n\n" {
		t.Errorf("AppendFrame = %q", got)
	}
}
