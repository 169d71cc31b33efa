package telemetry

import (
	"net/url"
	"strings"
	"testing"
	"unsafe"
)

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

// Every capture of an agent version carries the same instructions: their
// rendering is made once and shared, and made again when they change.
func TestSystemInstructionsRenderedOncePerText(t *testing.T) {
	var tel Telemetry
	first := tel.systemInstructions("File errands under Admin.")
	again := tel.systemInstructions(strings.Clone("File errands under Admin."))
	if first != textParts("File errands under Admin.") || unsafe.StringData(first) != unsafe.StringData(again) {
		t.Errorf("rendered %q then %q, not shared", first, again)
	}
	if n := testing.AllocsPerRun(100, func() { tel.systemInstructions("File errands under Admin.") }); n != 0 {
		t.Errorf("%v allocations to render the same instructions again", n)
	}
	if got := tel.systemInstructions("File errands under People."); got != textParts("File errands under People.") {
		t.Errorf("changed instructions rendered as %q", got)
	}
}
