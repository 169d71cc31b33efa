package main

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
)

// config is everything `serve` reads from the environment, and the
// built-in simulator its flags set.
type config struct {
	Addr string
	// Server is the capture server's settings: Keys (BRAINWIRE_API_KEYS),
	// RunTimeout, AgentRefresh (how often serve asks the agent service
	// which agent version it runs), MaxUploads, UploadTimeout and H2C
	// (HTTP/2 without TLS beside HTTP/1.1). serve adds the backends.
	Server       server.Config
	GeneratedKey string // set when no keys were configured
	DataDir      string

	// Agent is the agent captures run on (agent.go).
	Agent agentConfig
	// Upstream shapes the connections to it.
	Upstream agenthttp.Upstream
	// Retries is how many times a refused call is sent again
	// (BRAINWIRE_UPSTREAM_RETRIES).
	Retries int
	// Sim is the built-in simulator's configuration, when Agent is the
	// simulator: the flags of serve, record and eval set it.
	Sim simulator.Config
}

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Addr:    cmp.Or(getenv("BRAINWIRE_ADDR"), "127.0.0.1:8000"),
		DataDir: cmp.Or(getenv("BRAINWIRE_DATA_DIR"), "./data"),
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return c, badSetting("BRAINWIRE_ADDR", c.Addr, listenAddress)
	}
	// Every setting that cannot be used is said at once.
	var errs [5]error
	c.Server.RunTimeout, errs[0] = envDuration(getenv, "BRAINWIRE_RUN_TIMEOUT", server.DefaultRunTimeout)
	c.Server.AgentRefresh, errs[1] = envDuration(getenv, "BRAINWIRE_AGENT_REFRESH", server.DefaultAgentRefresh)
	c.Server.UploadTimeout, errs[2] = envDuration(getenv, "BRAINWIRE_UPLOAD_TIMEOUT", server.DefaultUploadTimeout)
	c.Server.MaxUploads, errs[3] = envInt(getenv, "BRAINWIRE_MAX_UPLOADS", server.DefaultMaxUploads, 1)
	c.Server.H2C, errs[4] = envBool(getenv, "BRAINWIRE_H2C", false)
	err := errors.Join(errs[:]...)
	if err != nil {
		return c, err
	}
	if keys := getenv("BRAINWIRE_API_KEYS"); keys != "" {
		if c.Server.Keys, err = server.ParseKeys(keys); err != nil {
			return c, fmt.Errorf("BRAINWIRE_API_KEYS: %w", err)
		}
	} else {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return c, fmt.Errorf("generating an api key: %w", err)
		}
		c.GeneratedKey = "bw_" + base64.RawURLEncoding.EncodeToString(b)
		c.Server.Keys = server.Keys{c.GeneratedKey: "default"}
	}
	if c.Agent, err = loadAgentConfig(getenv); err != nil {
		return c, err
	}
	if c.Upstream, err = loadUpstream(getenv, c.Agent); err != nil {
		return c, err
	}
	if c.Retries, err = loadRetries(getenv); err != nil {
		return c, err
	}
	return c, nil
}

// listenAddress is what BRAINWIRE_ADDR accepts.
const listenAddress = "a listen address, host:port (127.0.0.1:8000, :8000)"

// badSetting is how every setting brainwire cannot use is refused: the
// variable, its value and what it accepts.
func badSetting(name, value, accepted string) error {
	return fmt.Errorf("%s: %q is not %s", name, value, accepted)
}

// envParse reads the setting name with parse, def when it is unset: the
// one way every typed setting is read, and a value parse refuses is
// refused as badSetting, saying what it accepts.
func envParse[T any](getenv func(string) string, name string, def T, accepted string, parse func(string) (T, bool)) (T, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	x, ok := parse(v)
	if !ok {
		var zero T
		return zero, badSetting(name, v, accepted)
	}
	return x, nil
}

// envDuration accepts a Go duration ("90s", "1m") or a number of seconds,
// above zero.
func envDuration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	return envParse(getenv, name, def, "a duration above zero (60s, 2m) or a number of seconds", func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		if secs, ferr := strconv.ParseFloat(v, 64); ferr == nil {
			d, err = time.Duration(secs*float64(time.Second)), nil
		}
		return d, err == nil && d > 0
	})
}

// envBool accepts what strconv.ParseBool does (true, false, 1, 0, ...).
func envBool(getenv func(string) string, name string, def bool) (bool, error) {
	return envParse(getenv, name, def, "true or false", func(v string) (bool, bool) {
		b, err := strconv.ParseBool(v)
		return b, err == nil
	})
}

// envInt accepts a whole number from min.
func envInt(getenv func(string) string, name string, def, min int) (int, error) {
	return envParse(getenv, name, def, fmt.Sprintf("a whole number from %d", min), func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= min
	})
}

// envURL accepts an http:// or https:// URL with a host.
func envURL(getenv func(string) string, name string) (string, error) {
	return envParse(getenv, name, "", "an https:// (or http://) URL", func(v string) (string, bool) {
		u, err := url.Parse(v)
		return v, err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
	})
}

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
	var u agenthttp.Upstream
	var errs [3]error
	u.H2C, errs[0] = envBool(getenv, "BRAINWIRE_UPSTREAM_H2C", agent.Sim != "")
	u.IdleConns, errs[1] = envInt(getenv, "BRAINWIRE_UPSTREAM_IDLE_CONNS", agenthttp.DefaultIdleConns, 1)
	u.MaxConns, errs[2] = envInt(getenv, "BRAINWIRE_UPSTREAM_MAX_CONNS", 0, 0)
	if err := errors.Join(errs[:]...); err != nil {
		return u, err
	}
	if u.MaxConns == 0 && getenv("BRAINWIRE_UPSTREAM_MAX_CONNS") != "" {
		u.MaxConns = -1 // set to 0: no bound
	}
	return u, nil
}
