package wiring_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/internal/syncbuf"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// What a gateway in front of the agent service names on its error pages,
// which only the people running brainwire may read.
const (
	internalHost = "agents-gw-7.int.contoso.net"
	internalAddr = "10.20.30.40"
)

// gatewayPage is a gateway's error page for status, as nginx writes one,
// naming the host and address it could not reach.
func gatewayPage(status int) string {
	s := fmt.Sprintf("%d %s", status, http.StatusText(status))
	return "<html>\r\n<head><title>" + s + "</title></head>\r\n<body>\r\n<center><h1>" + s + "</h1></center>\r\n" +
		"<p>upstream " + internalHost + " (" + internalAddr + ":8443) did not answer; request id 7f3c9e21</p>\r\n" +
		"<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
}

// observedPhone is a capture server over agent, retrying as fastRetries
// says, whose log, spans and metrics the test reads.
type observedPhone struct {
	phone   *httptest.Server
	log     *syncbuf.Buffer
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
}

func observe(t *testing.T, agent func(http.RoundTripper) (brainwire.Provider, error)) observedPhone {
	t.Helper()
	o := observedPhone{log: &syncbuf.Buffer{}, spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.metrics))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()); _ = mp.Shutdown(t.Context()) })
	tel, err := telemetry.New(telemetry.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	o.phone = serveWired(t, wiring.Config{
		Server:    server.Config{Logger: slog.New(slog.NewJSONHandler(o.log, nil))},
		Agent:     agent,
		Retry:     fastRetries,
		Telemetry: tel,
	})
	return o
}

// errorFrame is the ERROR frame of a capture-v2 stream, or "".
func errorFrame(stream string) string {
	for frame := range strings.SplitSeq(stream, "\n\n") {
		if strings.HasPrefix(frame, `data: {"type":"ERROR"`) {
			return frame
		}
	}
	return ""
}

// capture posts a capture as the phone and checks what the phone, the log
// and the capture's span got: the phone an ERROR saying want and nothing
// of the page; the log's failed capture and the span the page's host and
// address.
func (o observedPhone) capture(t *testing.T, want string) {
	t.Helper()
	got := postStream(t, o.phone, "/api/capture", `{"text":"Call Sarah about the offsite"}`)
	frame := errorFrame(got)
	if frame == "" {
		t.Fatalf("the phone got no ERROR:\n%s", got)
	}
	for _, leak := range []string{internalHost, internalAddr, "nginx", "<"} {
		if strings.Contains(frame, leak) {
			t.Errorf("the phone's ERROR holds %q:\n%s", leak, frame)
		}
	}
	if want != "" && !strings.Contains(frame, `"message":"`+want+`"`) {
		t.Errorf("the phone's ERROR:\n%s\nwant the message %q", frame, want)
	}
	var failed string
	for line := range strings.SplitSeq(o.log.String(), "\n") {
		if strings.Contains(line, `"msg":"capture ended`) {
			failed = line
		}
	}
	if !strings.Contains(failed, internalHost) || !strings.Contains(failed, internalAddr) {
		t.Errorf("the log's line of the capture's end does not name the page's host and address:\n%s\nthe log:\n%s", failed, o.log)
	}
	if span := captureSpanText(o.spans.Ended()); !strings.Contains(span, internalHost) || !strings.Contains(span, internalAddr) {
		t.Errorf("the capture's span does not name the page's host and address:\n%s", span)
	}
}

// captureSpanText is what the capture's span says of its failure: its
// status and its events' attributes.
func captureSpanText(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, s := range spans {
		if !strings.HasPrefix(s.Name(), "invoke_agent") {
			continue
		}
		b.WriteString(s.Status().Description + "\n")
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				b.WriteString(ev.Name + " " + string(kv.Key) + ": " + kv.Value.Emit() + "\n")
			}
		}
	}
	return b.String()
}

// TestAGatewayPageStaysOffThePhone answers a capture's first call with a
// gateway's HTML page (400, and 429 and 503 on every try): the phone is
// told the status in a fixed sentence (for 429, that the service is busy),
// and only the log and the capture's span get the page, with the hosts and
// addresses it names.
func TestAGatewayPageStaysOffThePhone(t *testing.T) {
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			first := u.calls[0]
			for _, status := range []int{http.StatusBadRequest, http.StatusTooManyRequests, http.StatusServiceUnavailable} {
				t.Run(fmt.Sprint(status), func(t *testing.T) {
					page := scripttest.Call{Method: first.Method, Path: first.Path,
						Response: scripttest.Raw(status, "text/html", gatewayPage(status)).WithHeader("retry-after-ms", "1")}
					script := []scripttest.Call{page}
					if status != http.StatusBadRequest {
						script = []scripttest.Call{page, page, page} // sent again twice
					}
					agent, requests := u.serve(t, script)
					o := observe(t, agent)
					want := fmt.Sprintf("The agent service failed: it answered %d %s", status, http.StatusText(status))
					if status == http.StatusTooManyRequests {
						want = "The agent service is busy; try again later"
					}
					o.capture(t, want)
					if n := len(requests()); n != len(script) {
						t.Errorf("sent %d times; want %d", n, len(script))
					}
				})
			}
		})
	}
}

// TestAnErrorEventOfAGatewayStaysOffThePhone: an error event in the
// service's stream whose data is not the service's JSON error (a gateway's
// page) is not the service's words: the phone gets a fixed sentence, the
// log and the capture's span the page.
func TestAnErrorEventOfAGatewayStaysOffThePhone(t *testing.T) {
	page := gatewayPage(http.StatusBadGateway)
	conv := rt.InConversation("conv_1")
	run := foundrytest.NewRun("thread_1", "run_1")
	scripts := map[string][]scripttest.Call{
		"responses": {
			rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1","object":"conversation","created_at":1741290958,"metadata":{}}`)),
			rt.Expect("POST /responses", rt.Stream(append(rt.NewTurn("resp_1", conv).Reasoning("rs_1", "It names ").Events(),
				rt.Event{Name: "error", Data: page})...)),
		},
		"classic": {
			foundrytest.Expect("POST /threads/runs", foundrytest.Stream(run.ThreadCreated(), run.Created(), run.InProgress(),
				foundrytest.Event{Name: "error", Data: page})),
		},
		"adk": {
			adktest.Expect("POST /apps/{app}/users/{user}/sessions", adktest.JSON(200, adktest.Session("s-1", "classifier", "alice"))),
			adktest.Expect("POST /run_sse", adktest.Stream(adktest.Frame{Data: page})),
		},
	}
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			agent, _ := u.serve(t, scripts[u.name])
			observe(t, agent).capture(t, "")
		})
	}
}
