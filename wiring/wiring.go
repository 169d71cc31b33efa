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
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/drain"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/httpspan"
)

// Config is what a brainwire server is made of. Keys, Agent and Store are
// required.
type Config struct {
	Keys server.Keys
	// Agent opens the agent provider over rt, the transport New built for
	// the agent service: telemetry and recording sit in it. The provider
	// adds its own authorization above rt, so that a recording holds what
	// went on the wire (redacted) and no trace header.
	Agent func(rt http.RoundTripper) (brainwire.Provider, error)
	// Transport carries the agent service's requests under everything
	// else; Upstream.Transport() when nil.
	Transport http.RoundTripper
	// Upstream shapes the transport New makes when Transport is nil.
	Upstream    agenthttp.Upstream
	Store       brainwire.Store
	Blobs       brainwire.BlobStore
	Transcriber brainwire.Transcriber

	// Telemetry instruments the server, the agent calls, the tools and
	// the store; nil (or one that records nothing) leaves them bare.
	Telemetry *telemetry.Telemetry
	// Recorder records captures into fixtures; nil records none.
	Recorder *recorder.Recorder
	// LogReasoning writes every reasoning chunk to Logger; off when
	// content capture is off.
	LogReasoning bool
	// Observer also watches every capture.
	Observer brainwire.Observer
	// WrapTools wraps each capture's tools outside telemetry's spans.
	WrapTools func(brainwire.ToolSet) brainwire.ToolSet
	Logger    *slog.Logger

	// Instructions, when set, replace the agent's instructions on every
	// run, and EvalRunID marks every capture as part of that evaluation
	// (`brainwire eval`).
	Instructions string
	EvalRunID    string

	// AgentName, AgentRefresh, RunTimeout, KeepAlive, MaxAudioBytes,
	// MaxUploads, UploadTimeout, H2C, NewID and Now are the server's
	// (server.Config); zero values take its defaults.
	AgentName     string
	AgentRefresh  time.Duration
	RunTimeout    time.Duration
	KeepAlive     time.Duration
	MaxAudioBytes int64
	MaxUploads    int
	UploadTimeout time.Duration
	H2C           bool
	NewID         func() string
	Now           func() time.Time
}

// New wires a capture server from cfg.
func New(cfg Config) (*server.Server, error) {
	if cfg.Agent == nil || cfg.Store == nil {
		return nil, fmt.Errorf("wiring: Agent and Store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	rt := cfg.Transport
	if rt == nil {
		rt = cfg.Upstream.Transport()
	}
	// Streams read to their end give their connection back (drain).
	rt = drain.Transport(rt)
	store := cfg.Store
	var observers brainwire.Observers
	var wrapTools func(brainwire.ToolSet) brainwire.ToolSet
	var middleware func(http.Handler) http.Handler
	if cfg.LogReasoning {
		observers = append(observers, telemetry.LogObserver{Logger: cfg.Logger})
	}
	if tel := cfg.Telemetry; tel != nil && tel.Enabled() {
		// Under the recorder, so recorded requests carry no traceparent.
		rt = tel.WrapTransport(rt)
		store = tel.WrapStore(store)
		observers = append(observers, tel)
		wrapTools = tel.WrapTools
		middleware = httpspan.Middleware(httpspan.Config{TracerProvider: tel.TracerProvider(), Propagator: tel.Propagator()})
	}
	if cfg.Recorder != nil {
		rt = cfg.Recorder.Transport(rt)
		observers = append(observers, cfg.Recorder)
	}
	if cfg.Observer != nil {
		observers = append(observers, cfg.Observer)
	}
	if outer := cfg.WrapTools; outer != nil {
		inner := wrapTools
		wrapTools = func(set brainwire.ToolSet) brainwire.ToolSet {
			if inner != nil {
				set = inner(set)
			}
			return outer(set)
		}
	}
	provider, err := cfg.Agent(rt)
	if err != nil {
		return nil, err
	}
	return server.New(server.Config{
		Keys:          cfg.Keys,
		Provider:      provider,
		Store:         store,
		Blobs:         cfg.Blobs,
		Transcriber:   cfg.Transcriber,
		Observer:      observers,
		WrapTools:     wrapTools,
		Middleware:    middleware,
		Logger:        cfg.Logger,
		AgentName:     cfg.AgentName,
		Instructions:  cfg.Instructions,
		EvalRunID:     cfg.EvalRunID,
		AgentRefresh:  cfg.AgentRefresh,
		RunTimeout:    cfg.RunTimeout,
		KeepAlive:     cfg.KeepAlive,
		MaxAudioBytes: cfg.MaxAudioBytes,
		MaxUploads:    cfg.MaxUploads,
		UploadTimeout: cfg.UploadTimeout,
		H2C:           cfg.H2C,
		NewID:         cfg.NewID,
		Now:           cfg.Now,
	})
}

// Foundry returns the Agent of an Azure AI Foundry Agent Service project
// (or of the simulator, or of a replay of either): the agent agentID at
// endpoint, called with api-version apiVersion, with auth above the
// transport (nil: no authorization).
func Foundry(endpoint, agentID, apiVersion string, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
	return func(rt http.RoundTripper) (brainwire.Provider, error) {
		if auth != nil {
			rt = auth(rt)
		}
		client, err := foundry.NewClient(endpoint, &http.Client{Transport: rt}, foundry.WithAPIVersion(apiVersion))
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		p, err := foundry.NewProvider(client, agentID)
		if err != nil {
			return nil, fmt.Errorf("agent service: %w", err)
		}
		return p, nil
	}
}

// ADK returns the Agent of an app served by a Google ADK API server (or
// the simulator's face of one, or a replay of either): the app appName at
// baseURL, with auth above the transport (nil: none; the API server has
// no authentication, a proxy in front may want a header).
func ADK(baseURL, appName string, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
	return func(rt http.RoundTripper) (brainwire.Provider, error) {
		if auth != nil {
			rt = auth(rt)
		}
		client, err := adk.NewClient(baseURL, &http.Client{Transport: rt})
		if err != nil {
			return nil, fmt.Errorf("agent server: %w", err)
		}
		p, err := adk.NewProvider(client, appName)
		if err != nil {
			return nil, fmt.Errorf("agent server: %w", err)
		}
		return p, nil
	}
}
