package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/brainwire/brainwire/internal/profiles"
)

// servePprof serves Go's profiles (net/http/pprof: /debug/pprof/...) on
// addr, a listener of its own apart from the API, until ctx ends. It has
// no authentication: bind it to loopback.
func servePprof(ctx context.Context, addr string, log *slog.Logger) (stop func(), err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, badSetting("BRAINWIRE_PPROF_ADDR", addr, listenAddress)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("BRAINWIRE_PPROF_ADDR: %w", err)
	}
	if ap, err := netip.ParseAddrPort(l.Addr().String()); err != nil || !ap.Addr().IsLoopback() {
		log.Warn("profiles are served on a non-loopback address, without authentication", "addr", l.Addr().String())
	}
	stop = profiles.Serve(ctx, l, func(err error) { log.Warn("profiles: serving stopped", "error", err) })
	log.Info("profiles", "addr", "http://"+l.Addr().String()+"/debug/pprof/")
	return stop, nil
}
