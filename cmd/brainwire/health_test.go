package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHealthCommand(t *testing.T) {
	base := startServe(t, nil)
	addr := strings.TrimPrefix(base, "http://")
	out, err := runCmd(t, map[string]string{"BRAINWIRE_ADDR": addr}, "health")
	if err != nil || !strings.Contains(out, `"status":"ok"`) {
		t.Fatalf("health of a running server: %v %s", err, out)
	}

	degraded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"status":"degraded"}`, http.StatusServiceUnavailable)
	}))
	defer degraded.Close()
	if _, err := runCmd(t, nil, "health", "-url", degraded.URL+"/health"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("health of a degraded server: %v", err)
	}
	degraded.Close()
	if _, err := runCmd(t, nil, "health", "-url", degraded.URL+"/health"); err == nil {
		t.Error("health of a stopped server succeeded")
	}
	if _, err := runCmd(t, map[string]string{"BRAINWIRE_ADDR": "no-port"}, "health"); err == nil {
		t.Error("a malformed BRAINWIRE_ADDR was accepted")
	}
}

func TestLocalHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:8000":   "http://127.0.0.1:8000/health",
		":8000":          "http://127.0.0.1:8000/health",
		"[::]:8080":      "http://[::1]:8080/health",
		"10.0.0.5:8000":  "http://10.0.0.5:8000/health",
		"127.0.0.1:9000": "http://127.0.0.1:9000/health",
	} {
		if got, err := localHealthURL(addr); err != nil || got != want {
			t.Errorf("localHealthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
}

// health -wait asks again until the server answers 200, and gives up
// when the time is up.
func TestHealthWait(t *testing.T) {
	var asked atomic.Int32
	starting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) < 3 {
			http.Error(w, `{"status":"degraded"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer starting.Close()
	if out, err := runCmd(t, nil, "health", "-wait", "10s", "-url", starting.URL+"/health"); err != nil || out != `{"status":"ok"}` || asked.Load() != 3 {
		t.Errorf("health -wait: %v %q after %d asks", err, out, asked.Load())
	}
	begin := time.Now()
	starting.Close()
	if _, err := runCmd(t, nil, "health", "-wait", "1s", "-url", starting.URL+"/health"); err == nil || time.Since(begin) < time.Second {
		t.Errorf("health -wait 1s on a stopped server: %v after %v", err, time.Since(begin))
	}
}
