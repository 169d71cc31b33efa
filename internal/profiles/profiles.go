// Package profiles serves Go's runtime profiles (net/http/pprof) on a
// listener of their own, apart from any API.
package profiles

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Serve serves /debug/pprof/ on l until ctx ends or stop is called; stop
// returns once serving has stopped. failed, if set, is told why serving
// stopped when it was not asked to. There is no authentication: keep l on
// loopback.
func Serve(ctx context.Context, l net.Listener, failed func(error)) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && failed != nil {
			failed(err)
		}
	}()
	return func() { _ = srv.Close(); <-done }
}
