package recorder_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/recorder"
)

const token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.secret-part/with+chars"

func TestRedactorHeaders(t *testing.T) {
	r := recorder.NewRedactor(token)
	for name, secret := range map[string]bool{
		"Authorization": true, "api-key": true, "X-Api-Key": true, "Ocp-Apim-Subscription-Key": true,
		"x-ms-blob-key": true, "X-Functions-Key": true, "Cookie": true, "x-ms-token-aad-id-token": true,
		"Content-Type": false, "x-ms-request-id": false, "Retry-After": false,
	} {
		got := r.Header(name, "value-1234")
		if secret != (got == recorder.Redacted) {
			t.Errorf("Header(%q) = %q", name, got)
		}
	}
	if got := r.Header("X-Trace", "Bearer "+token); strings.Contains(got, token) {
		t.Errorf("a configured secret in an ordinary header survived: %q", got)
	}
}

func TestRedactorStringsAndJSON(t *testing.T) {
	r := recorder.NewRedactor(token, "short") // too short to be a secret: ignored
	cases := []struct{ in, want string }{
		{"https://acct.blob.core.windows.net/c/b.wav?sv=2024-05-04&sr=b&sig=AbC%2Bdef%3D&se=2030", "https://acct.blob.core.windows.net/c/b.wav?sv=2024-05-04&sr=b&sig=[REDACTED]&se=2030"},
		{`{"url":"https://x/y?sv=1\u0026sig=AbC%2B"}`, `{"url":"https://x/y?sv=1\u0026sig=[REDACTED]"}`},
		{"token " + token + " end", "token [REDACTED] end"},
		{"a short word stays", "a short word stays"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// In JSON the token may appear escaped (/ as \/ by some encoders).
	escaped, _ := json.Marshal(map[string]string{"note": token})
	if got := string(r.JSON(escaped)); strings.Contains(got, "secret-part") {
		t.Errorf("JSON kept the token: %s", got)
	}
	// Secret-named keys lose their values; others keep theirs and their order.
	in := json.RawMessage(`{"b":1,"api_key":"k-123","nested":{"client_secret":"s","usage":{"total_tokens":5}}}`)
	got := string(r.JSON(in))
	if strings.Contains(got, "k-123") || strings.Contains(got, `"s"`) || !strings.Contains(got, `"total_tokens":5`) {
		t.Errorf("JSON(%s) = %s", in, got)
	}
	plain := json.RawMessage(`{"z":1,"a":{"prompt_tokens":3}}`)
	if got := r.JSON(plain); string(got) != string(plain) {
		t.Errorf("JSON changed a body without secrets: %s", got)
	}
}

func TestRedactorFixtureAndLeaks(t *testing.T) {
	fx := sampleFixture()
	fx.Capture.Text = "remember " + token
	rq := &fx.Exchanges[0].Request
	rq.Header = map[string]string{"Authorization": "Bearer " + token}
	rq.Query["sig"] = "abc"
	rq.Body = json.RawMessage(`{"thread":{"messages":[{"content":"audio: https://a/b?sv=1\u0026sig=ZZZ"}]}}`)
	ev := &fx.Exchanges[0].Response.Events[1]
	*ev = recorder.NewEvent(ev.Ms, ev.Name, []byte(`{"value":"`+token+`"}`))
	r := recorder.NewRedactor(token)
	r.Fixture(fx)
	b, err := recorder.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"secret-part", "ZZZ", `"abc"`} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the redacted fixture still holds %q", leak)
		}
	}
	if r.Leaks(b) {
		t.Error("Leaks reports a secret in a redacted fixture")
	}
	if !r.Leaks([]byte("x" + token)) {
		t.Error("Leaks misses the token")
	}
}
