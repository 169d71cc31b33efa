package telemetry

import (
	"testing"
)

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
