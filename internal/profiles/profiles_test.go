package profiles_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/internal/profiles"
)

func TestServeUntilStopped(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	stop := profiles.Serve(t.Context(), l, func(err error) { failed <- err })
	base := "http://" + l.Addr().String()

	resp, err := http.Get(base + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("%s: %.200s", resp.Status, body)
	}

	stop()
	if _, err := http.Get(base + "/debug/pprof/"); err == nil {
		t.Fatal("still serving after stop")
	}
	select {
	case err := <-failed:
		t.Fatalf("a stop that was asked for reported as a failure: %v", err)
	default:
	}
}
