package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/bench/load"
	"github.com/brainwire/brainwire/simulator"
)

// The floor command serves captures and profiles on the addresses it is
// given, as Launch starts it, until it is told to stop.
func TestServeFloor(t *testing.T) {
	sim := simulator.New(simulator.Config{ChunkDelay: time.Millisecond})
	simL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go sim.Serve(t.Context(), simL)

	addr, err := load.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr, err := load.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- serveFloor(ctx, []string{"-addr", addr, "-upstream", "http://" + simL.Addr().String(), "-face", load.FaceThreads,
			"-key", "k", "-h2c", "-pprof-addr", pprofAddr}, &log)
	}()

	// Ready when /health answers; the command may still be starting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the floor command ended: %v\n%s", err, &log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+load.DefaultPath, strings.NewReader(`{"text":"Call mom about her birthday"}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"type":"CLASSIFIED"`) || !strings.Contains(string(body), `"type":"COMPLETE"`) {
		t.Errorf("capture: %s", body)
	}
	resp, err = http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("profiles: %s %.100s", resp.Status, body)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the floor command ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the floor command did not stop")
	}
	if !strings.Contains(log.String(), "listening on "+addr) {
		t.Errorf("log: %s", &log)
	}
}
