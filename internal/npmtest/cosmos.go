package npmtest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// FixCosmosRead works around a cosmosdb-server 0.13.4 bug: a point read of
// a missing document with a partition key header dereferences the missing
// document and answers 500 "Cannot read properties of undefined" where the
// service answers 404. It rewrites exactly that answer, in place, to the
// service's.
func FixCosmosRead(req *http.Request, resp *http.Response) (*http.Response, error) {
	if req.Method != http.MethodGet || resp.StatusCode != http.StatusInternalServerError || !strings.Contains(req.URL.Path, "/docs/") {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte("Cannot read properties of undefined")) {
		notFound := []byte(`{"code":"NotFound","message":"Entity with the specified id does not exist in the system."}`)
		resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(notFound)), int64(len(notFound))
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}

// CosmosProxy returns the endpoint of a proxy, for the test's length, in
// front of the cosmosdb-server at addr that answers a missing document's
// read as the service does (FixCosmosRead), for code that makes its own
// Cosmos client (a whole `brainwire serve`).
func CosmosProxy(t testing.TB, addr string) string {
	t.Helper()
	return CosmosProxyHook(t, addr, nil)
}

// CosmosProxyHook is CosmosProxy calling hook, when not nil, with every
// request before it goes on: a test can hold it, or stop its sender there.
// A request the hook drops goes no further: its sender gets a 502.
func CosmosProxyHook(t testing.TB, addr string, hook func(r *http.Request) (drop bool)) string {
	t.Helper()
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	var self string // the proxy's host:port
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path == "/" && resp.StatusCode == http.StatusOK {
			// The account's regional endpoints, which the SDK sends
			// everything else to, must be the proxy too.
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			body = bytes.ReplaceAll(body, []byte(addr), []byte(self))
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			resp.Header.Del("Content-Length")
			return nil
		}
		_, err := FixCosmosRead(resp.Request, resp)
		return err
	}
	var h http.Handler = rp
	if hook != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hook(r) {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			rp.ServeHTTP(w, r)
		})
	}
	// Its address is known before it serves: the rewrite reads it.
	srv := httptest.NewUnstartedServer(h)
	self = srv.Listener.Addr().String()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}
