package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/server"
)

// endsAfterHangUp observes captures and, at a capture's end, waits until
// its request has ended: the client has hung up by then. It makes sure the
// capture is logged after the client left, which happens now and then when
// the client closes right after COMPLETE, as the app does.
type endsAfterHangUp struct{}

func (endsAfterHangUp) StartCapture(ctx context.Context, _ brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, hangUpCapture{ctx: ctx}
}

type hangUpCapture struct{ ctx context.Context }

func (hangUpCapture) ProviderEvent(brainwire.AgentEvent)  {}
func (hangUpCapture) CaptureEvent(brainwire.CaptureEvent) {}

func (c hangUpCapture) End(brainwire.CaptureResult) {
	select {
	case <-c.ctx.Done():
	case <-time.After(10 * time.Second):
	}
}

func withLogger(l *slog.Logger) option { return func(c *server.Config) { c.Logger = l } }

// waitForLog waits until the log holds want, and returns the log.
func waitForLog(t *testing.T, logs *syncbuf.Buffer, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", want, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return logs.String()
}

// A client that hangs up right after COMPLETE got everything: the capture
// ended normally, whenever the server gets to log it.
func TestHangUpAfterCompleteIsNotADisconnect(t *testing.T) {
	logs := &syncbuf.Buffer{}
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah", "People", 0.9, "classified"), 3)
	h := newHarness(t, c.Script(), withLogger(slog.New(slog.NewTextHandler(logs, nil))), withObserver(endsAfterHangUp{}))
	conn, got := h.openStream("/api/capture", "application/json", `{"text":"Call Sarah"}`, `"type":"COMPLETE"`)
	conn.Close()
	if !strings.Contains(got, `"type":"CLASSIFIED"`) {
		t.Fatalf("stream: %s", got)
	}
	l := waitForLog(t, logs, `msg="capture ended`)
	if strings.Contains(l, "client went away") || !strings.Contains(l, `level=INFO msg="capture ended" `) {
		t.Fatalf("a completed capture logged as a disconnect:\n%s", l)
	}
}

// When the continuation after a filing fails, the phone still gets its
// outcome and COMPLETE, and the upstream run, left waiting for the tool
// outputs or broken off mid-way, is cancelled rather than left to expire.
func TestSubmitFailureAfterFilingCancelsTheRun(t *testing.T) {
	r := ft.NewRun(upThread, upRun)
	for _, tc := range []struct {
		name   string
		submit ft.Response
		opts   []option
	}{
		{"5xx", ft.Error(500, "server_error", "The server had an error."), nil},
		{"reset before any event", ft.Stream(ft.Cut(r.Queued())), nil},
		{"reset mid-stream", ft.Stream(r.Queued(), r.InProgress(), ft.Cut(ft.MessageDelta("msg_02", "Filed"))), nil},
		{"error event", ft.Stream(r.Queued(), ft.ErrorEvent(`{"error":{"message":"overloaded","code":"server_error"}}`)), nil},
		{"ended before the run did", ft.Stream(r.Queued(), r.InProgress()), nil},
		{"hang past the run timeout", ft.Stream(r.Queued(), ft.Hang()), []option{withRunTimeout(300 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := classify(ft.FileCaptureCall("call_1", "Call Sarah", "People", 0.9, "classified"), 2)
			script := []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)), ft.Expect(submitPath(), tc.submit)}
			h := newHarness(t, script, tc.opts...)
			got := payloads(h.capture("Call Sarah"))
			if !strings.Contains(got, `"type":"CLASSIFIED"`) || !strings.HasSuffix(got, `"runId":"run-id2"}`) || strings.Contains(got, `"ERROR"`) {
				t.Fatalf("stream:\n%s", got)
			}
			h.waitForCancel(upRun)
		})
	}
}
