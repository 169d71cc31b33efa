package agenthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/agenthttp"
)

// answered reports whether err is the service's non-2xx answer status.
func answered(err error, status int) bool {
	var a *agenterr.APIError
	return errors.As(err, &a) && a.StatusCode == status && a.Service == "svc"
}

func server(t *testing.T, status int, contentType, body string) (agenthttp.Client, string, *http.Request) {
	t.Helper()
	var got http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c := agenthttp.Client{HTTP: srv.Client(), Who: "the agent service", Service: "svc"}
	return c, srv.URL, &got
}

// upstream is the message an error shows people, if it reads as a
// brainwire upstream error.
func upstream(err error) string {
	var be *brainwire.Error
	if errors.As(err, &be) && be.Code == brainwire.EUpstream {
		return be.Message
	}
	return ""
}

func TestDo(t *testing.T) {
	c, url, got := server(t, 200, "application/json", `{"id":"x"}`)
	var out struct{ ID string }
	if err := c.Do(context.Background(), http.MethodPost, url, map[string]int{"a": 1}, &out); err != nil || out.ID != "x" {
		t.Fatalf("%+v, %v", out, err)
	}
	if got.Header.Get("Content-Type") != "application/json" || got.Header.Get("Accept") != "application/json" {
		t.Errorf("request headers %v", got.Header)
	}

	c, url, _ = server(t, 503, "application/json", `{}`)
	if err := c.Do(context.Background(), http.MethodGet, url, nil, &out); !answered(err, 503) {
		t.Errorf("a 503: %v", err)
	}
	c, url, _ = server(t, 200, "text/html", `<html>`)
	err := c.Do(context.Background(), http.MethodGet, url, nil, &out)
	if upstream(err) != "the agent service's answer was not understood" || !strings.Contains(err.Error(), "decoding response") {
		t.Errorf("an answer that is not JSON: %v", err)
	}
}

func TestStream(t *testing.T) {
	c, url, got := server(t, 200, "text/event-stream; charset=utf-8", "data: x\n\n")
	body, err := c.Stream(context.Background(), url, map[string]bool{"stream": true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if string(b) != "data: x\n\n" || got.Method != http.MethodPost || got.Header.Get("Accept") != "text/event-stream" {
		t.Errorf("stream %q, request %s %v", b, got.Method, got.Header)
	}

	c, url, _ = server(t, 429, "application/json", `{}`)
	if _, err := c.Stream(context.Background(), url, nil); !answered(err, 429) {
		t.Errorf("a 429: %v", err)
	}
	c, url, _ = server(t, 200, "text/html", "<html>Bad gateway</html>")
	_, err = c.Stream(context.Background(), url, nil)
	if upstream(err) != "the agent service did not answer with an event stream" || !strings.Contains(err.Error(), "got text/html: <html>Bad gateway</html>") {
		t.Errorf("an answer that is not a stream: %v", err)
	}
}

// recordingTransport keeps the requests it sends.
type recordingTransport struct {
	next http.RoundTripper
	reqs []*http.Request
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.reqs = append(rt.reqs, req)
	return rt.next.RoundTrip(req)
}

// A stream's request lives as long as its response, so once the answer has
// begun its body is let go of; until then the transport can send it again,
// as a redirect does.
func TestStreamLetsGoOfItsBodyOnceAnswered(t *testing.T) {
	var bodies []string
	mux := http.NewServeMux()
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		http.Redirect(w, r, "/runs", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/runs", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: x\n\n")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	rt := &recordingTransport{next: srv.Client().Transport}
	c := agenthttp.Client{HTTP: &http.Client{Transport: rt}, Who: "the agent service", Service: "svc"}

	body, err := c.Stream(t.Context(), srv.URL+"/moved", map[string]string{"instructions": "file it"})
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	const want = `{"instructions":"file it"}`
	if len(bodies) != 2 || bodies[0] != want || bodies[1] != want {
		t.Fatalf("the service read %q, want %q before and after the redirect", bodies, want)
	}
	for i, req := range rt.reqs {
		if req.ContentLength != int64(len(want)) {
			t.Errorf("request %d: Content-Length %d, want %d", i, req.ContentLength, len(want))
		}
		if rc, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(rc)
			t.Errorf("request %d: its body can still be had once answered: %q", i, b)
		}
		if n, err := req.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("request %d: its body still reads: %d bytes, %v", i, n, err)
		}
	}
}
