package replay_test

import (
	"os"
	"testing"
)

// A 429 the server sent again past is invisible to the phone: the
// recording of it gives the phone the bytes the same capture gets without
// it. (AG-UI's stream also shows the agent's tool call ids, which the
// simulator draws from the fixture's name.)
func TestARetried429IsInvisibleToThePhone(t *testing.T) {
	for _, suffix := range []string{".sse.golden", ".v1.golden"} {
		retried, err := os.ReadFile("../fixtures/responses-upstream-429-retried" + suffix)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := os.ReadFile("../fixtures/responses-classified-people" + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if string(retried) != string(plain) {
			t.Errorf("%s: the retried capture's stream differs from the one without the 429", suffix)
		}
	}
}
