package wiring_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/scripttest"
)

// TestAFailedLookupIsLogged loses the answer of a new classic capture's
// first call after the request went out (the connection resets, or a
// gateway answers 502), and refuses the lookup of the thread it may have
// made: the call is not sent again, the phone is told what it is told
// without the lookup (not that brainwire could not sign in, as the
// lookup's refusal alone would read), and the server's log line for the
// failed capture says why the service could not tell.
func TestAFailedLookupIsLogged(t *testing.T) {
	classic := upstreams()[1]
	first := classic.calls[0]
	for _, c := range []struct {
		name  string
		fault scripttest.Response
		told  string
	}{
		{"reset", scripttest.Reset(), `{"type":"ERROR","message":"The agent service could not be reached","code":"unavailable"}`},
		{"502", foundrytest.Error(http.StatusBadGateway, "bad_gateway", "The upstream did not answer."),
			`{"type":"ERROR","message":"The agent service failed: The upstream did not answer.","code":"upstream"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent, requests := classic.serve(t, []scripttest.Call{
				{Method: first.Method, Path: first.Path, Response: c.fault},
				foundrytest.Expect("GET /threads", foundrytest.Error(http.StatusForbidden, "PermissionDenied", "The principal lacks the required data action.")),
			})
			o := observe(t, agent)
			if got := postStream(t, o.phone, "/api/capture", `{"text":"Call Sarah about the offsite"}`); !strings.Contains(got, c.told) {
				t.Errorf("the phone got:\n%s\nwant %s", got, c.told)
			}
			if n := len(requests()); n != 2 {
				t.Errorf("%d requests; want the call and its lookup", n)
			}
			var line string
			for l := range strings.Lines(o.log.String()) {
				if strings.Contains(l, "capture ended: run failed") {
					line = l
				}
			}
			if want := "listing threads: foundry: 403 Forbidden (PermissionDenied)"; !strings.Contains(line, want) {
				t.Errorf("the capture's log line:\n%s\nwant it to say %q", line, want)
			}
		})
	}
}
