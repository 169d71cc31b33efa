// Package wiring is brainwire's composition root: New is the one place
// where the capture server, the agent provider's HTTP stack, telemetry,
// recording and the tools are put together. `brainwire serve`,
// `brainwire record` and `brainwire eval` call it, and so does the replay
// harness (package replay), so what the golden suite replays is the
// wiring production runs.
//
// It is a package of its own, not part of cmd/brainwire's main, because
// replay needs the same wiring and cannot import a main package; and it
// is not under internal/, which holds leaf helpers that import nothing
// above them. Nothing but cmd/, replay and tests imports it.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/drain"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/telemetry"
)

// Config is what a brainwire server is made of: the capture server's own
// configuration, and what New builds under and around it. Server.Keys,
// Server.Store and Agent are required.
type Config struct {
	// Server configures the capture server; zero values take its
	// defaults. New fills in what it wires: Provider is Agent's (leave it
	// nil), Store is wrapped in telemetry, and what is set of Observer,
	// WrapTools and Middleware is joined to what New adds. Observer also
	// watches every capture, after telemetry and the recorder; WrapTools
	// wraps each capture's tools outside telemetry's spans; Middleware
	// wraps the HTTP API outside telemetry's server span (so the handler
	// it wraps has no Route method when telemetry is on).
	Server server.Config
	// Agent opens the agent provider over rt, the transport New built for
	// the agent service: telemetry and recording sit in it. The provider
	// adds its own authorization above rt, so that a recording holds what
	// went on the wire (redacted) and no trace header.
	Agent func(rt http.RoundTripper) (brainwire.Provider, error)
	// Transport carries the agent service's requests under everything
	// else; Upstream.Transport() when nil.
	Transport http.RoundTripper
	// Upstream shapes the transport New makes when Transport is nil.
	Upstream agenthttp.Upstream
	// Retry sends a call the agent service refused for a moment again,
	// above the recorder and telemetry, so that each attempt is recorded
	// and has its own span; the zero value sends none again. Telemetry
	// counts the retries (its Observe is joined to New's).
	Retry retry.Policy

	// Telemetry instruments the server, the agent calls, the tools and
	// the store; nil (or one that records nothing) leaves them bare.
	Telemetry *telemetry.Telemetry
	// Recorder records captures into fixtures; nil records none.
	Recorder *recorder.Recorder
	// LogReasoning writes every reasoning chunk to Server.Logger; off when
	// content capture is off.
	LogReasoning bool
}

// New wires a capture server from cfg.
func New(cfg Config) (*server.Server, error) {
	sc := cfg.Server
	if cfg.Agent == nil || sc.Store == nil {
		return nil, errors.New("wiring: Agent and Server.Store are required")
	}
	if sc.Provider != nil {
		return nil, errors.New("wiring: Server.Provider is opened by Agent; leave it nil")
	}
	if sc.Logger == nil {
		sc.Logger = slog.New(slog.DiscardHandler)
	}
	rt := cfg.Transport
	if rt == nil {
		rt = cfg.Upstream.Transport()
	}
	// Streams read to their end give their connection back (drain).
	rt = drain.Transport(rt)
	var observers brainwire.Observers
	var wrapTools func(brainwire.ToolSet) brainwire.ToolSet
	var middleware func(http.Handler) http.Handler
	if cfg.LogReasoning {
		observers = append(observers, telemetry.LogObserver{Logger: sc.Logger})
	}
	policy := cfg.Retry
	if tel := cfg.Telemetry; tel != nil && tel.Enabled() {
		// Under the recorder, so recorded requests carry no traceparent.
		rt = tel.WrapTransport(rt)
		policy.Observe = ObserveRetry(tel, policy.Observe)
		sc.Store = tel.WrapStore(sc.Store)
		observers = append(observers, tel)
		wrapTools = tel.WrapTools
		middleware = tel.Middleware()
	}
	if cfg.Recorder != nil {
		rt = cfg.Recorder.Transport(rt)
		observers = append(observers, cfg.Recorder)
	}
	if sc.Observer != nil {
		observers = append(observers, sc.Observer)
	}
	// Above the recorder and telemetry, below the provider's auth: each
	// attempt is recorded and has its span.
	rt = policy.Transport(rt)
	if tel := cfg.Telemetry; tel != nil && tel.Enabled() {
		// Above the retries: a failed attempt counts as retried or as the
		// call's answer once they have decided.
		rt = tel.WrapCalls(rt)
	}
	sc.Observer = observers
	sc.WrapTools = around(wrapTools, sc.WrapTools)
	sc.Middleware = around(middleware, sc.Middleware)
	provider, err := cfg.Agent(rt)
	if err != nil {
		return nil, err
	}
	sc.Provider = provider
	return server.New(sc)
}

// Upstream is the transport of a client of a service other than the
// agent's (transcription) over base, stacked as the agent's is: each
// attempt traced and counted by tel, refused attempts sent again as policy
// says, and a failed attempt counted in brainwire.upstream.errors as
// retried or as the call's answer once the retries decided. Without
// telemetry (tel nil or off), policy's retries over base.
func Upstream(tel *telemetry.Telemetry, policy retry.Policy, base http.RoundTripper) http.RoundTripper {
	if tel == nil || !tel.Enabled() {
		return policy.Transport(base)
	}
	policy.Observe = ObserveRetry(tel, policy.Observe)
	return tel.WrapCalls(policy.Transport(tel.WrapTransport(base)))
}

// ObserveRetry has telemetry count a retry and mark the attempt it
// sends, then next (if any) see it: the Observe of a retry.Policy, for
// the agent service's calls and for the other upstream clients
// (transcription).
func ObserveRetry(tel *telemetry.Telemetry, next func(context.Context, retry.Retry) context.Context) func(context.Context, retry.Retry) context.Context {
	return func(ctx context.Context, r retry.Retry) context.Context {
		ctx = tel.Resend(ctx, r.Op.Name, r.Count, r.Reason, r.Wait)
		if next != nil {
			ctx = next(ctx, r)
		}
		return ctx
	}
}

// around returns what applies inner, then outer; either may be nil.
func around[T any](inner, outer func(T) T) func(T) T {
	switch {
	case outer == nil:
		return inner
	case inner == nil:
		return outer
	}
	return func(v T) T { return outer(inner(v)) }
}

// agent is an Agent opened by build on an HTTP client over the
// transport, with auth above it (nil: no authorization); what names the
// service in build's errors.
func agent(what string, auth func(http.RoundTripper) http.RoundTripper, build func(*http.Client) (brainwire.Provider, error)) func(http.RoundTripper) (brainwire.Provider, error) {
	return func(rt http.RoundTripper) (brainwire.Provider, error) {
		if auth != nil {
			rt = auth(rt)
		}
		p, err := build(&http.Client{Transport: rt})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return p, nil
	}
}

// Foundry returns the Agent of an Azure AI Foundry Agent Service project
// (or of the simulator, or of a replay of either): the agent agentID at
// endpoint, called with api-version apiVersion, with auth above the
// transport (nil: no authorization).
func Foundry(endpoint, agentID, apiVersion string, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
	return agent("agent service", auth, func(hc *http.Client) (brainwire.Provider, error) {
		client, err := foundry.NewClient(endpoint, hc, foundry.WithAPIVersion(apiVersion))
		if err != nil {
			return nil, err
		}
		return foundry.NewProvider(client, agentID)
	})
}

// ADK returns the Agent of an app served by a Google ADK API server (or
// the simulator's face of one, or a replay of either): the app appName at
// baseURL, with auth above the transport (nil: none; the API server has
// no authentication, a proxy in front may want a header).
func ADK(baseURL, appName string, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
	return agent("agent server", auth, func(hc *http.Client) (brainwire.Provider, error) {
		client, err := adk.NewClient(baseURL, hc)
		if err != nil {
			return nil, err
		}
		return adk.NewProvider(client, appName)
	})
}

// Responses returns the Agent of a Responses API endpoint (or of the
// simulator's Responses face, or of a replay of either): a, run as opts
// say, at baseURL ({project}/openai/v1 for a Foundry project, whose
// endpoint project is then; "" for other endpoints), with auth above the
// transport (nil: no authorization).
func Responses(baseURL, project string, a responses.Agent, auth func(http.RoundTripper) http.RoundTripper, opts ...responses.ProviderOption) func(http.RoundTripper) (brainwire.Provider, error) {
	return agent("agent service", auth, func(hc *http.Client) (brainwire.Provider, error) {
		var clientOpts []responses.ClientOption
		if project != "" {
			clientOpts = append(clientOpts, responses.WithProject(project))
		}
		client, err := responses.NewClient(baseURL, hc, clientOpts...)
		if err != nil {
			return nil, err
		}
		return responses.NewProvider(client, a, opts...)
	})
}
