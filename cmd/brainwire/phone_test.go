package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/syncbuf"
)

const phoneKey = "phone-test-key-0123456789"

// startServe runs `brainwire serve` in-process on embedded defaults (the
// simulator and SQLite) until the test ends, and returns its base URL.
func startServe(t *testing.T, extraEnv map[string]string, args ...string) string {
	t.Helper()
	base, _, _ := runServe(t, extraEnv, args...)
	return base
}

// runServe is tryServe for a serve that must start.
func runServe(t *testing.T, extraEnv map[string]string, args ...string) (base string, logs *syncbuf.Buffer, stop func() error) {
	t.Helper()
	base, logs, stop, err := tryServe(t, extraEnv, args...)
	if err != nil {
		t.Fatalf("serve exited: %v\n%s", err, logs)
	}
	return base, logs, stop
}

// tryServe runs `brainwire serve` in-process with args on embedded
// defaults (a free port, a scratch data directory, phoneKey's user) plus
// extraEnv until the test ends, the built-in simulator pacing its chunks
// 2ms apart unless args say otherwise. It returns its base URL, its logs
// and stop, which shuts it down as a signal would and returns what serve
// returned; or what serve returned when it stopped before it listened.
func tryServe(t *testing.T, extraEnv map[string]string, args ...string) (base string, logs *syncbuf.Buffer, stop func() error, err error) {
	t.Helper()
	env := map[string]string{
		"BRAINWIRE_ADDR":     "127.0.0.1:0",
		"BRAINWIRE_DATA_DIR": t.TempDir(),
		"BRAINWIRE_API_KEYS": phoneKey + ":phone-user",
	}
	for k, v := range extraEnv {
		env[k] = v
	}
	f, err := parseServe(args, io.Discard, io.Discard)
	if err != nil {
		return "", nil, nil, err
	}
	if !slices.Contains(f.simSet, "-sim-chunk-delay") {
		f.sim.chunkDelay = 2 * time.Millisecond
	}
	logs = &syncbuf.Buffer{}
	log, err := newLogger(envFunc(env), logs, slog.LevelInfo)
	if err != nil {
		return "", logs, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- serveReady(ctx, envFunc(env), f, io.Discard, log, func(a net.Addr) { addrc <- a.String() })
	}()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() { cancel(); serveErr = <-done })
		return serveErr
	}
	select {
	case addr := <-addrc:
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		return "http://" + addr, logs, stop, nil
	case err := <-done:
		cancel()
		return "", logs, nil, err
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("serve did not start:\n%s", logs)
	}
	return "", nil, nil, nil
}

// TestPhoneClientParsesTheStream drives the phone app's own SSE client
// (react-native-sse under Node) against the real server and checks it
// receives the whole capture-v2 sequence through its message listener.
func TestPhoneClientParsesTheStream(t *testing.T) {
	base := startServe(t, nil)

	cases := []struct {
		text    string
		outcome string
	}{
		{"Call mom about her birthday on Sunday", "CLASSIFIED"},
		{"asdf qwerty zxcv", "MISUNDERSTOOD"},
		{"Renew the car insurance before Friday #fail", "ERROR"},
	}
	for _, c := range cases {
		t.Run(c.outcome, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"text": c.text})
			var got struct {
				Events []map[string]any
				Errors []any
			}
			runNodeClient(t, "react-native-sse", "phone-client.cjs", &got, base+"/api/capture", phoneKey, string(body))
			var types []string
			for _, e := range got.Events {
				types = append(types, fmt.Sprint(e["type"]))
			}
			want := []string{"STEP_START", "STEP_END", c.outcome, "COMPLETE"}
			if c.outcome == "ERROR" {
				want = []string{"STEP_START", "ERROR", "COMPLETE"}
			}
			if fmt.Sprint(types) != fmt.Sprint(want) || len(got.Errors) != 0 {
				t.Fatalf("phone received %v (errors %v), want %v", types, got.Errors, want)
			}
			if e := got.Events[1]; c.outcome == "ERROR" && e["code"] != "upstream" {
				t.Fatalf("ERROR %v, want code upstream", e)
			}
		})
	}
}
