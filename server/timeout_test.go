package server_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/foundry"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/server"
)

// The run timeout is the timeout, on the classic API too: when the call
// creating the run hangs, or its stream stalls once it named the run,
// every protocol's client hears ERROR (code timeout) at the run timeout,
// not once the provider has seen its request through to cancel the run
// (for up to its cancel timeout, 5 s).
func TestClassicRunTimeoutIsTheTimeout(t *testing.T) {
	const timeout = 700 * time.Millisecond
	r := ft.NewRun(upThread, upRun)
	for _, up := range []struct {
		name        string
		stream      []ft.Event
		cancelHangs bool
	}{
		{"the first call hangs", []ft.Event{ft.Hang()}, false},
		{"the stream stalls", []ft.Event{r.ThreadCreated(), r.Created(), r.InProgress(), ft.Hang()}, false},
		{"the stream stalls and so does the cancel", []ft.Event{r.ThreadCreated(), r.Created(), r.InProgress(), ft.Hang()}, true},
	} {
		for _, route := range []struct{ name, path, body, errType string }{
			{"v2", "/api/capture", `{"text":"Call Sarah about the offsite"}`, `"type":"ERROR"`},
			{"v1", "/api/ag-ui", `{"messages":[{"id":"m1","role":"user","content":"Call Sarah about the offsite"}]}`, `"type":"RUN_ERROR"`},
			{"AG-UI", "/api/agui", runInput("Call Sarah about the offsite", `{}`, `{}`), `"type":"RUN_ERROR"`},
		} {
			t.Run(up.name+"/"+route.name, func(t *testing.T) {
				t.Parallel()
				script := []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(up.stream...))}
				opts := []option{withRunTimeout(timeout)}
				if up.cancelHangs {
					opts, script = append(opts, withHangingCancels(t, script)), nil
				}
				h := newHarness(t, script, opts...)
				start := time.Now()
				resp := h.post(route.path, "application/json", route.body)
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if line := sc.Text(); strings.Contains(line, route.errType) {
						took := time.Since(start)
						if !strings.Contains(line, `"code":"timeout"`) {
							t.Fatalf("the error: %s", line)
						}
						// Generous for a busy machine, and far from the 5 s
						// a cancel timeout would add.
						if took > timeout+2*time.Second {
							t.Errorf("the error came %v after the capture started; the run timeout is %v", took.Round(time.Millisecond), timeout)
						}
						return
					}
				}
				t.Fatalf("no %s in the stream (%v)", route.errType, sc.Err())
			})
		}
	}
}

// withHangingCancels runs the classic provider against its own upstream
// speaking script, whose run cancels never get an answer.
func withHangingCancels(t *testing.T, script []ft.Call) option {
	up := ft.NewServer(t, script...)
	hc := up.Client()
	next := hc.Transport
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/cancel") {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return next.RoundTrip(r)
	})
	client, err := foundry.NewClient(up.Endpoint(), hc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := foundry.NewProvider(client, "asst_test")
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) { c.Provider = p }
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
