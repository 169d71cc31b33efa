package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// health probes a running server's /health and fails unless it answers
// 200: the container image's HEALTHCHECK, which has no shell or curl to
// run (the base image holds nothing but the binary).
func health(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	url := fs.String("url", "", "the health URL (default: /health on BRAINWIRE_ADDR, on loopback)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" {
		u, err := localHealthURL(envOr(getenv, "BRAINWIRE_ADDR", "127.0.0.1:8000"))
		if err != nil {
			return err
		}
		*url = u
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %d: %s", *url, resp.StatusCode, body)
	}
	_, err = stdout.Write(body)
	return err
}

// localHealthURL is /health on the address serve listens on, reached over
// loopback when it listens on every interface.
func localHealthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("health: BRAINWIRE_ADDR %q: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/health", nil
}
