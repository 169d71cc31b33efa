package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHealthCommand: health prints the report of a server that answers
// 200 and fails on any other answer; without -url it asks BRAINWIRE_ADDR,
// over loopback when that is every interface; -wait asks again until the
// server answers 200, and gives up when the time is up.
func TestHealthCommand(t *testing.T) {
	base := startServe(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	for _, addr := range []string{"127.0.0.1:" + port, "0.0.0.0:" + port, ":" + port} {
		if out, err := runCmd(t, map[string]string{"BRAINWIRE_ADDR": addr}, "health"); err != nil || !strings.Contains(out, `"status":"ok"`) {
			t.Errorf("health with BRAINWIRE_ADDR=%s: %v %s", addr, err, out)
		}
	}
	if u, _ := localHealthURL("[::]:8080"); u != "http://[::1]:8080/health" {
		t.Errorf("every IPv6 interface is asked over %s", u)
	}
	if _, err := runCmd(t, map[string]string{"BRAINWIRE_ADDR": "no-port"}, "health"); err == nil {
		t.Error("a malformed BRAINWIRE_ADDR was accepted")
	}

	var asked atomic.Int32
	starting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) < 3 {
			http.Error(w, `{"status":"degraded"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer starting.Close()
	if _, err := runCmd(t, nil, "health", "-url", starting.URL+"/health"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("health of a degraded server: %v", err)
	}
	if out, err := runCmd(t, nil, "health", "-wait", "10s", "-url", starting.URL+"/health"); err != nil || out != `{"status":"ok"}` || asked.Load() != 3 {
		t.Errorf("health -wait: %v %q after %d asks", err, out, asked.Load())
	}
	begin := time.Now()
	starting.Close()
	if _, err := runCmd(t, nil, "health", "-wait", "1s", "-url", starting.URL+"/health"); err == nil || time.Since(begin) < time.Second {
		t.Errorf("health -wait 1s on a stopped server: %v after %v", err, time.Since(begin))
	}
}
