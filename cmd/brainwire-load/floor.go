package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/brainwire/brainwire/bench/floor"
	"github.com/brainwire/brainwire/bench/load"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/profiles"
)

// floorShutdownGrace is how long captures still running may take to end
// once the floor server is told to stop.
const floorShutdownGrace = time.Minute

// serveFloor runs the floor server (package bench/floor) until ctx ends,
// in an http.Server set up as serve's, calling the simulator over serve's
// upstream transport.
func serveFloor(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet(load.FloorCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	upstream := fs.String("upstream", "", "the simulator's base URL (http://host:port)")
	face := fs.String("face", load.FaceResponses, "the simulator face: responses or threads")
	key := fs.String("key", "", "the API key phones send")
	token := fs.String("token", "load", "the bearer token sent upstream")
	h2c := fs.Bool("h2c", false, "HTTP/2 without TLS upstream, as serve's BRAINWIRE_UPSTREAM_H2C")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's profiles (/debug/pprof/) on this address, as serve's BRAINWIRE_PPROF_ADDR")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments: %v", load.FloorCommand, fs.Args())
	}
	h, err := floor.New(floor.Config{Upstream: *upstream, Face: *face, Key: *key, Token: *token,
		Client: &http.Client{Transport: agenthttp.Upstream{H2C: *h2c}.Transport()}})
	if err != nil {
		return err
	}
	if *pprofAddr != "" {
		// As serve's BRAINWIRE_PPROF_ADDR: a listener apart from the API's.
		l, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("profiles: %w", err)
		}
		defer profiles.Serve(ctx, l, func(err error) { fmt.Fprintf(stderr, "profiles: serving stopped: %v\n", err) })()
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *addr, err)
	}
	// As serve's server (server.ListenAndServe), but for its logger.
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	// Phones may come as HTTP/2 streams (-phones-h2c), as serve takes
	// them with BRAINWIRE_H2C.
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	fmt.Fprintf(stderr, "floor server (%s face, h2c %t) listening on %s, calling %s\n", *face, *h2c, l.Addr(), *upstream)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), floorShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
