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
//	BRAINWIRE_UPSTREAM_MAX_CONNS   connections dialled or pooled at once
//	                               (default: 64 with h2c, else 1024;
//	                               0: no bound)
func loadUpstream(getenv func(string) string, agent agentConfig) (app.Upstream, error) {
	u := app.Upstream{H2C: agent.Sim != ""}
	h2c, err := envBool(getenv, "BRAINWIRE_UPSTREAM_H2C", u.H2C)
	if err != nil {
		return u, err
	}
	u.H2C = h2c
	n, err := envInt(getenv, "BRAINWIRE_UPSTREAM_IDLE_CONNS", app.DefaultIdleConns)
	if err != nil {
		return u, err
	}
	u.IdleConns = n
	if v := getenv("BRAINWIRE_UPSTREAM_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return u, fmt.Errorf("BRAINWIRE_UPSTREAM_MAX_CONNS: %q is not a whole number from 0", v)
		}
		u.MaxConns = n
		if n == 0 {
			u.MaxConns = -1 // no bound
		}
	}
	return u, nil
}
