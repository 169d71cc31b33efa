package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

const healthAbout = `
Probes a running server's /health: exit 0 and the report when it answers 200,
1 otherwise. It is the container image's HEALTHCHECK; with -wait, a script's
way to wait for a server it just started.`

// envHealth is health's environment note.
const envHealth = "Without -url it probes /health on BRAINWIRE_ADDR (127.0.0.1:8000), over loopback\n" +
	"when that is every interface, as serve listens."

// healthRetry is how often health -wait asks again.
const healthRetry = 500 * time.Millisecond

func health(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := newCommand("health", "health [flags]", healthAbout, envHealth)
	url := cmd.String("url", "", "the health URL (default: /health on BRAINWIRE_ADDR, on loopback)")
	timeout := cmd.Duration("timeout", 5*time.Second, "how long to wait for each answer")
	wait := cmd.Duration("wait", 0, "keep trying until the server answers 200, for this long at most (0: try once)")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	if *url == "" {
		u, err := localHealthURL(cmp.Or(getenv("BRAINWIRE_ADDR"), "127.0.0.1:8000"))
		if err != nil {
			return err
		}
		*url = u
	}
	deadline := time.Now().Add(*wait)
	for {
		body, err := probeHealth(ctx, *url, *timeout)
		if err == nil {
			_, err = stdout.Write(body)
			return err
		}
		if time.Until(deadline) <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(healthRetry, time.Until(deadline))):
		}
	}
}

// probeHealth asks url once and returns the report of a 200 answer.
func probeHealth(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("health: %s answered %d: %s", url, resp.StatusCode, body)
	}
	return body, nil
}

// localHealthURL is /health on the address serve listens on, reached over
// loopback when it listens on every interface.
func localHealthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", badSetting("BRAINWIRE_ADDR", addr, listenAddress)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/health", nil
}
