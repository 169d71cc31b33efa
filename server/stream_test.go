package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/server"
)

func withKeepAlive(d time.Duration) option { return func(c *server.Config) { c.KeepAlive = d } }

func TestKeepAliveCommentsWhileTheAgentIsSilent(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "x", "Admin", 0.9, "classified"), 1)
	evs := c.Stream()
	evs[4] = evs[4].After(400 * time.Millisecond) // a long silence mid-run
	h := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/runs", ft.Stream(evs...)),
		ft.Expect(submitPath(), ft.Stream(c.Continuation()...)),
	}, withKeepAlive(100*time.Millisecond))
	resp := h.post("/api/capture", "application/json", `{"text":"x"}`)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), ": keep-alive\n\n"); n < 2 {
		t.Fatalf("%d keep-alive comments in a 400 ms silence:\n%s", n, raw)
	}
	// Comments never break the frames the phone parses.
	frames := readFrames(t, strings.NewReader(string(raw)))
	if len(frames) != 4 || frames[3].Data["type"] != "COMPLETE" {
		t.Fatalf("frames:\n%s", payloads(frames))
	}
}

func TestShutdownLetsRunningCapturesFinish(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "x", "Ideas", 0.9, "classified"), 2)
	cont := c.Continuation()
	cont[len(cont)-2] = cont[len(cont)-2].After(300 * time.Millisecond)
	h := newHarness(t, []ft.Call{
		// ListenAndServe describes the agent before it serves.
		ft.Expect("GET /assistants/asst_test", ft.JSON(200, map[string]any{"id": "asst_test", "object": "assistant", "model": "gpt-4o"})),
		ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)),
		ft.Expect(submitPath(), ft.Stream(cont...)),
	})
	// The same handler, served by ListenAndServe this time.
	cfgSrv, err := server.New(server.Config{Keys: server.Keys{testKey: testUser}, Provider: h.provider, Store: h.store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addrc, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- cfgSrv.ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc

	req, _ := http.NewRequest("POST", "http://"+addr.String()+"/api/capture", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stop() // SIGTERM arrives while the capture is streaming
	frames := readFrames(t, resp.Body)
	resp.Body.Close()
	if len(frames) != 4 || frames[3].Data["type"] != "COMPLETE" {
		t.Fatalf("capture cut by shutdown:\n%s", payloads(frames))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ListenAndServe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	if _, err := net.Dial("tcp", addr.String()); err == nil {
		t.Fatal("still accepting connections after shutdown")
	}
}
