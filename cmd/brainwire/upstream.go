package main

import (
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/retry"
)

// loadRetries reads BRAINWIRE_UPSTREAM_RETRIES: how many times a call the
// agent service (or the transcription service) refused for a moment is
// sent again (default 2; 0: never).
func loadRetries(getenv func(string) string) (int, error) {
	return envInt(getenv, "BRAINWIRE_UPSTREAM_RETRIES", retry.DefaultRetries, 0)
}

// loadUpstream reads how serve talks to the agent service:
//
//	BRAINWIRE_UPSTREAM_H2C         true: HTTP/2 without TLS to an http://
//	                               service that accepts it (default: true
//	                               for the built-in simulator only)
//	BRAINWIRE_UPSTREAM_IDLE_CONNS  idle connections kept for reuse
//	BRAINWIRE_UPSTREAM_MAX_CONNS   connections dialled or pooled at once
//	                               (default: 64 with h2c, else 1024;
//	                               0: no bound)
func loadUpstream(getenv func(string) string, agent agentConfig) (agenthttp.Upstream, error) {
	u := agenthttp.Upstream{H2C: agent.Sim != ""}
	var err error
	if u.H2C, err = envBool(getenv, "BRAINWIRE_UPSTREAM_H2C", u.H2C); err != nil {
		return u, err
	}
	if u.IdleConns, err = envInt(getenv, "BRAINWIRE_UPSTREAM_IDLE_CONNS", agenthttp.DefaultIdleConns, 1); err != nil {
		return u, err
	}
	if u.MaxConns, err = envInt(getenv, "BRAINWIRE_UPSTREAM_MAX_CONNS", 0, 0); err != nil {
		return u, err
	}
	if u.MaxConns == 0 && getenv("BRAINWIRE_UPSTREAM_MAX_CONNS") != "" {
		u.MaxConns = -1 // set to 0: no bound
	}
	return u, nil
}
