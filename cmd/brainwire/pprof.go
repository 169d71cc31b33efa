package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiles (net/http/pprof: /debug/pprof/...) on
// addr, a listener of its own apart from the API, until ctx ends. It has
// no authentication: bind it to loopback.
func servePprof(ctx context.Context, addr string, log *slog.Logger) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("BRAINWIRE_PPROF_ADDR: %w", err)
	}
	if ip := net.ParseIP(hostOf(l.Addr().String())); ip == nil || !ip.IsLoopback() {
		log.Warn("profiles are served on a non-loopback address, without authentication", "addr", l.Addr().String())
	}
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
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiles: serving stopped", "error", err)
		}
	}()
	log.Info("profiles", "addr", "http://"+l.Addr().String()+"/debug/pprof/")
	return func() { _ = srv.Close(); <-done }, nil
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
