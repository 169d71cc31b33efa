package server_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/server"
)

// listenAndServe serves h's provider and store with ListenAndServe, H2C
// as given, until the test ends; it returns the address.
func listenAndServe(t *testing.T, h *harness, h2c bool) string {
	t.Helper()
	srv, err := server.New(server.Config{Keys: server.Keys{testKey: testUser}, Provider: h.provider, Store: h.store,
		Logger: slog.New(slog.DiscardHandler), AgentRefresh: -1, H2C: h2c})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addrc, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a }) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	})
	select {
	case a := <-addrc:
		return a.String()
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
		return ""
	}
}

// describeAgent answers the question ListenAndServe asks before it
// serves.
func describeAgent() ft.Call {
	return ft.Expect("GET /assistants/asst_test", ft.JSON(200, map[string]any{"id": "asst_test", "object": "assistant", "model": "gpt-4o"}))
}

// h2cClient speaks only HTTP/2 without TLS, as an ingress configured for
// HTTP/2 to its backends does.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func captureRequest(ctx context.Context, t *testing.T, addr string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/capture", strings.NewReader(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// The stream reaches the client event by event over HTTP/2 too: the
// first frame arrives while the agent is still held mid-run.
func TestH2CStreamsEachEventAsItComes(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "x", "Ideas", 0.9, "classified"), 2)
	gate := ft.NewGate()
	evs := c.Stream()
	held := append(append(append([]ft.Event(nil), evs[:4]...), gate.Hold()), evs[4:]...)
	h := newHarness(t, []ft.Call{
		describeAgent(),
		ft.Expect("POST /threads/runs", ft.Stream(held...)),
		ft.Expect(submitPath(), ft.Stream(c.Continuation()...)),
	})
	addr := listenAndServe(t, h, true)

	resp, err := h2cClient(t).Do(captureRequest(context.Background(), t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s, want HTTP/2 200", resp.Proto, resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, `"STEP_START"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	select {
	case <-gate.Reached():
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's stream never reached the gate")
	}
	gate.Open()
	if blank, err := br.ReadString('\n'); blank != "\n" || err != nil {
		t.Fatalf("after STEP_START: %q, %v", blank, err)
	}
	frames := readFrames(t, br)
	if len(frames) != 3 || frames[1].Data["type"] != "CLASSIFIED" || frames[2].Data["type"] != "COMPLETE" {
		t.Fatalf("frames after STEP_START:\n%s", payloads(frames))
	}

	// HTTP/1.1 clients are served on the same port (this one with a key
	// the server does not know).
	req := captureRequest(context.Background(), t, addr)
	req.Header.Set("Authorization", "Bearer not-a-key-0123456789")
	resp1, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp1.Body.Close()
	if resp1.ProtoMajor != 1 || resp1.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HTTP/1.1 request: %s %s, want HTTP/1.1 401", resp1.Proto, resp1.Status)
	}
}

// A client that resets its stream (an ingress whose phone went away)
// ends the capture and the upstream run with it, as a closed HTTP/1.1
// connection does.
func TestH2CStreamResetCancelsTheRun(t *testing.T) {
	r := ft.NewRun(upThread, upRun)
	h := newHarness(t, []ft.Call{describeAgent(), ft.Expect("POST /threads/runs", ft.Stream(
		r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), ft.MessageDelta("msg_01", "thinking"), ft.Hang()))})
	addr := listenAndServe(t, h, true)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := h2cClient(t).Do(captureRequest(ctx, t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"STEP_START"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	// STEP_START goes out before the run is asked for: a stream reset
	// before then has no run to cancel.
	deadline := time.Now().Add(10 * time.Second)
	for len(h.up.Find("POST /threads/runs")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run was never asked for")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // RST_STREAM; the connection stays up for the other streams
	h.waitForCancel(upRun)
}

// Without H2C, HTTP/2's preface is refused: no client gets HTTP/2
// without TLS unless the operator asked for it.
func TestH2COffRefusesHTTP2(t *testing.T) {
	h := newHarness(t, []ft.Call{describeAgent()})
	addr := listenAndServe(t, h, false)
	resp, err := h2cClient(t).Do(captureRequest(context.Background(), t, addr))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("HTTP/2 without TLS served: %s %s", resp.Proto, resp.Status)
	}
}
