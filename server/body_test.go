package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
