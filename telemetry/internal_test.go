package telemetry

import (
	"net/url"
	"testing"
)

func TestUpstreamOperation(t *testing.T) {
	cases := []struct {
		method, path, op, thread, run string
	}{
		{"POST", "/api/projects/p/threads/runs", OpProcessThreadRun, "", ""},
		{"POST", "/api/projects/p/threads/thread_1/runs", OpProcessThreadRun, "thread_1", ""},
		{"POST", "/threads/thread_1/runs/run_2/submit_tool_outputs", OpSubmitToolOutputs, "thread_1", "run_2"},
		{"POST", "/api/projects/p/threads/thread_1/runs/run_2/cancel", OpCancelRun, "thread_1", "run_2"},
		{"GET", "/api/projects/p/threads/thread_1/runs/run_2", OpGetRun, "thread_1", "run_2"},
		{"GET", "/threads/thread_1/runs", OpListRuns, "thread_1", ""},
		{"POST", "/api/projects/p/threads/thread_1/messages", OpCreateMessage, "thread_1", ""},
		{"GET", "/threads/thread_1/messages", OpListMessages, "thread_1", ""},
		{"POST", "/api/projects/p/threads", OpCreateThread, "", ""},
		{"GET", "/threads/thread_1", OpGetThread, "thread_1", ""},
		{"GET", "/api/projects/p/assistants/asst_1", OpGetAgent, "", ""},
		{"DELETE", "/api/projects/p/threads/thread_1", "DELETE", "", ""},
		{"GET", "/somewhere/else", "GET", "", ""},
	}
	for _, c := range cases {
		op, th, run := upstreamOperation(c.method, c.path)
		if op != c.op || th != c.thread || run != c.run {
			t.Errorf("%s %s: %q %q %q, want %q %q %q", c.method, c.path, op, th, run, c.op, c.thread, c.run)
		}
	}
}

func TestRedactURL(t *testing.T) {
	u, _ := url.Parse("https://user:pw@x.services.ai.azure.com/api/projects/p/threads/runs?api-version=v1&sig=secret&key=k#frag")
	if got, want := redactURL(u), "https://x.services.ai.azure.com/api/projects/p/threads/runs?api-version=v1"; got != want {
		t.Errorf("redactURL = %s, want %s", got, want)
	}
}

func TestSpanLimitsKeepEveryEvent(t *testing.T) {
	l := SpanLimits()
	if l.EventCountLimit >= 0 {
		t.Errorf("EventCountLimit %d: a long run's oldest chunks would be dropped", l.EventCountLimit)
	}
	if l.AttributePerEventCountLimit >= 0 && l.AttributePerEventCountLimit < 5 {
		t.Errorf("AttributePerEventCountLimit %d drops chunk attributes", l.AttributePerEventCountLimit)
	}
}

func TestRedactSAS(t *testing.T) {
	in := `{"blob_url":"https://acct.blob.core.windows.net/voice/a.m4a?sv=2024-01-01&se=2026&sp=r&sig=abc%2Bdef%3D"}`
	want := `{"blob_url":"https://acct.blob.core.windows.net/voice/a.m4a?sv=2024-01-01&se=2026&sp=r&sig=REDACTED"}`
	if got := redactSAS(in); got != want {
		t.Errorf("redactSAS = %s", got)
	}
	if got := redactSAS(`{"text":"no url"}`); got != `{"text":"no url"}` {
		t.Errorf("changed %s", got)
	}
}
