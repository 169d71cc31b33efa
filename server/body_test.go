package server_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/server"
)

// A JSON body that stalls past the server's read deadline is a 408 with a
// plain message on every JSON route, AG-UI's included: no socket
// addresses, no 400.
func TestStalledJSONBodyTimesOut(t *testing.T) {
	h := newHarness(t, nil)
	srv := httptest.NewUnstartedServer(h.server.Handler())
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	for _, path := range []string{"/api/agui", "/api/capture", "/api/ag-ui"} {
		for name, framing := range map[string]string{
			"stalled":      "Content-Length: 4096\r\n",
			"never-ending": "Transfer-Encoding: chunked\r\n",
		} {
			t.Run(path+" "+name, func(t *testing.T) {
				conn, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s\r\n", path, testKey, framing)
				if strings.HasPrefix(framing, "Transfer") {
					// A chunk every so often, for ever.
					go func() {
						for {
							if _, err := io.WriteString(conn, "1\r\n \r\n"); err != nil {
								return
							}
							time.Sleep(50 * time.Millisecond)
						}
					}()
				} else {
					_, _ = io.WriteString(conn, `{"text":`)
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var d struct{ Detail string }
				_ = json.Unmarshal(b, &d)
				if resp.StatusCode != http.StatusRequestTimeout || d.Detail != "the request body did not arrive in time" {
					t.Fatalf("got %d %s, want 408", resp.StatusCode, b)
				}
			})
		}
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}

// A RunAgentInput is held to the conversation's limit (1 MiB) when the
// server cannot take voice captures, and to that plus the audio limit in
// base64 when it can; a body over the limit is refused whether or not it
// declares its length, and an audio part at the audio limit in a body at
// the limit is taken.
func TestAGUIBodyLimit(t *testing.T) {
	const conversation = 1 << 20
	// body is a RunAgentInput of exactly n bytes carrying content.
	body := func(t *testing.T, content any, n int) string {
		t.Helper()
		pad := n - len(runInput(content, `{}`, `{"pad":""}`))
		if pad < 0 {
			t.Fatalf("content alone is over %d bytes", n)
		}
		b := runInput(content, `{}`, `{"pad":"`+strings.Repeat("a", pad)+`"}`)
		if len(b) != n {
			t.Fatalf("body is %d bytes, want %d", len(b), n)
		}
		return b
	}
	post := func(h *harness, b string, chunked bool) reply {
		var r io.Reader = strings.NewReader(b)
		if chunked {
			r = io.MultiReader(r) // no length known: sent chunked
		}
		return h.send(http.MethodPost, "/api/agui", http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + testKey}}, r)
	}

	t.Run("voice unavailable", func(t *testing.T) {
		h := newHarness(t, nil) // a blob store but no transcriber
		for _, chunked := range []bool{false, true} {
			r := post(h, body(t, "hello", conversation+1), chunked)
			if r.status != http.StatusRequestEntityTooLarge || r.detail != fmt.Sprintf("request body is over %d bytes", conversation) {
				t.Fatalf("chunked %v: got %d %s, want 413", chunked, r.status, r.body)
			}
		}
		if n := len(h.up.Requests()); n != 0 {
			t.Errorf("%d upstream calls", n)
		}
	})

	t.Run("voice available", func(t *testing.T) {
		const maxAudio = 1024
		h := newHarness(t, nil, withSimulator(t), withMaxAudio(maxAudio), withTranscriber(stubTranscriber{"Call mom about her birthday on Sunday."}))
		limit := conversation + base64.StdEncoding.EncodedLen(maxAudio)
		wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00")
		wav = append(wav, make([]byte, maxAudio-len(wav))...)
		audio := []map[string]any{{"type": "audio", "source": map[string]string{
			"type": "data", "value": base64.StdEncoding.EncodeToString(wav), "mimeType": "audio/wav"}}}
		for _, chunked := range []bool{false, true} {
			r := post(h, body(t, audio, limit+1), chunked)
			if r.status != http.StatusRequestEntityTooLarge || r.detail != fmt.Sprintf("request body is over %d bytes", limit) {
				t.Fatalf("chunked %v: got %d %s, want 413", chunked, r.status, r.body)
			}
		}
		evs := h.agui(body(t, audio, limit))
		if last := evs[len(evs)-1]; last.typ() != "RUN_FINISHED" || evs[1]["stepName"] != "Processing" {
			t.Fatalf("audio at the limit: %s", types(evs))
		}
	})
}

// The JSON body and text limits are the README's: a body of exactly
// 64 KiB carrying the longest text in its widest UTF-8 is taken, a byte
// more is 413.
func TestJSONBodyLimitIsTheDocumentedOne(t *testing.T) {
	const body, text = 64 << 10, 10000
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if said := strings.Join(strings.Fields(string(readme)), " "); !strings.Contains(said, "JSON bodies are at most 64 KiB") ||
		!strings.Contains(said, "at most 10 000 characters") {
		t.Errorf("the README does not give the limits of %d bytes and %d characters", body, text)
	}
	if server.DefaultMaxBodyBytes != body || server.DefaultMaxTextLength != text {
		t.Fatalf("limits %d bytes, %d characters; the README says %d, %d", server.DefaultMaxBodyBytes, server.DefaultMaxTextLength, body, text)
	}
	h := newHarness(t, nil, withSimulator(t))
	of := func(n int) string {
		b := `{"text":"` + strings.Repeat("𝄞", text) + `"}`
		return b[:len(b)-1] + strings.Repeat(" ", n-len(b)) + "}"
	}
	if r := h.do("POST", "/api/capture", testKey, "bearer", "application/json", of(body)); r.status != http.StatusOK {
		t.Errorf("a body of %d bytes: %d %s", body, r.status, r.body)
	}
	if r := h.do("POST", "/api/capture", testKey, "bearer", "application/json", of(body+1)); r.status != http.StatusRequestEntityTooLarge ||
		r.detail != fmt.Sprintf("request body is over %d bytes", body) {
		t.Errorf("a body of %d bytes: %d %s", body+1, r.status, r.body)
	}
}
