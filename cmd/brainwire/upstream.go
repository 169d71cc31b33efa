package main

import (
	"fmt"
	"strconv"

	"github.com/brainwire/brainwire/internal/app"
)

// loadUpstream reads how serve talks to the agent service:
//
//	BRAINWIRE_UPSTREAM_H2C         true: HTTP/2 without TLS to an http://
//	                               service that accepts it (default: true
//	                               for the built-in simulator only)
//	BRAINWIRE_UPSTREAM_IDLE_CONNS  idle connections kept for reuse
func loadUpstream(getenv func(string) string, agent agentConfig) (app.Upstream, error) {
	u := app.Upstream{H2C: agent.Sim != ""}
	if v := getenv("BRAINWIRE_UPSTREAM_H2C"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return u, fmt.Errorf("BRAINWIRE_UPSTREAM_H2C: %q is not true or false", v)
		}
		u.H2C = b
	}
	n, err := envInt(getenv, "BRAINWIRE_UPSTREAM_IDLE_CONNS", app.DefaultIdleConns)
	if err != nil {
		return u, err
	}
	u.IdleConns = n
	return u, nil
}
