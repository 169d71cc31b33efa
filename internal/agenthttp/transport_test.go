package agenthttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/agenthttp"
)

// A cold burst over HTTP/2 (h2c, or TLS as to Azure) dials a few
// connections at a time, not one per call that comes while the first is
// being set up: the calls wait, and share what is dialled. Unbounded,
// every one of them dials.
func TestUpstreamHTTP2ColdBurstDialsFew(t *testing.T) {
	const n = 200 // fewer than the server's streams per connection
	for _, tc := range []struct {
		name  string
		up    agenthttp.Upstream
		tls   bool
		bound int // 0: none
	}{
		{"h2c default", agenthttp.Upstream{H2C: true}, false, agenthttp.DefaultH2CConns},
		{"h2c unbounded", agenthttp.Upstream{H2C: true, MaxConns: -1}, false, 0},
		{"tls bounded", agenthttp.Upstream{MaxConns: 16}, true, 16},
		{"tls unbounded", agenthttp.Upstream{MaxConns: -1}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			most, dials, errs := coldBurst(t, tc.up, tc.tls, n)
			if tc.bound == 0 {
				// Unbounded is the control: its dials only show that the
				// bound is what keeps them few. Its extra connections may
				// be cut under a call on a busy machine.
				if len(errs) > 0 {
					t.Logf("unbounded, %d of %d calls failed, first: %v", len(errs), n, errs[0])
				}
			} else if len(errs) > 0 {
				t.Fatalf("%d of %d calls failed, first: %v", len(errs), n, errs[0])
			}
			if tc.bound > 0 && (most > tc.bound || dials > 2*tc.bound) {
				t.Errorf("a cold burst of %d calls dialled %d connections, %d at once; want at most %d at once", n, dials, most, tc.bound)
			}
			if tc.bound == 0 && most <= agenthttp.DefaultH2CConns {
				t.Errorf("unbounded, a cold burst of %d calls dialled %d at once at most: the test does not tell the bound apart", n, most)
			}
			t.Logf("%d calls: %d dials, %d at once at most", n, dials, most)
		})
	}
}

// coldBurst sends n calls at once through up's transport to an HTTP/2
// server (h2c, or over TLS) that answers each with its headers and holds
// it open until all have them, each dial taking 50 ms; it returns the
// most dials in flight at once, the dials in all, and the calls' errors.
func coldBurst(t *testing.T, up agenthttp.Upstream, overTLS bool, n int) (most, dials int, failed []error) {
	t.Helper()
	var answered sync.WaitGroup
	answered.Add(n)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	tr := up.Transport()
	defer tr.CloseIdleConnections()
	if overTLS {
		srv.EnableHTTP2 = true
		srv.StartTLS()
		certs := x509.NewCertPool()
		certs.AddCert(srv.Certificate())
		tr.TLSClientConfig = &tls.Config{RootCAs: certs}
	} else {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
		srv.Start()
	}
	defer srv.Close()

	var mu sync.Mutex
	inFlight := 0
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		inFlight++
		dials++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		select {
		case <-time.After(50 * time.Millisecond): // a TLS handshake's time, say
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return dial(ctx, network, addr)
	}

	var calls sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		calls.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if err != nil {
				answered.Done()
				errs <- err
				return
			}
			resp, err := tr.RoundTrip(req)
			answered.Done()
			if err != nil {
				errs <- err
				return
			}
			<-release
			resp.Body.Close()
			if resp.ProtoMajor != 2 {
				errs <- fmt.Errorf("answered over %s", resp.Proto)
			}
		})
	}
	answered.Wait()
	close(release)
	calls.Wait()
	close(errs)
	for err := range errs {
		failed = append(failed, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return most, dials, failed
}
