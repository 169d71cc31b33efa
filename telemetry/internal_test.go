package telemetry

import (
	"net/url"
	"testing"
)

func TestRedactURL(t *testing.T) {
	u, _ := url.Parse("https://user:pw@x.services.ai.azure.com/api/projects/p/threads/runs?api-version=v1&sig=secret&key=k#frag")
	if got, want := redactURL(u), "https://x.services.ai.azure.com/api/projects/p/threads/runs?api-version=v1"; got != want {
		t.Errorf("redactURL = %s, want %s", got, want)
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
