// Package server is the capture server: routes, API-key auth, the
// requests of each protocol, and the SSE stream of a capture's events to
// the client in its protocol. The captures themselves run in package
// capture.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/capture"
	"github.com/brainwire/brainwire/shadow"
)

// Defaults for the limits in Config.
const (
	DefaultRunTimeout    = 60 * time.Second
	DefaultMaxBodyBytes  = 64 << 10
	DefaultMaxTextLength = 10000
	DefaultKeepAlive     = 15 * time.Second
)

// Config holds what a Server needs. Provider, Store and Keys are required.
type Config struct {
	Keys        Keys
	Provider    brainwire.Provider
	Store       brainwire.Store
	Blobs       brainwire.BlobStore
	Transcriber brainwire.Transcriber
	// Observer watches every capture: reasoning chunks as they arrive,
	// provider events, the outcome. Nil observes nothing.
	Observer brainwire.Observer
	// WrapTools, if set, wraps each capture's tool set (e.g. to trace
	// every tool call); it must return a set that calls through.
	WrapTools func(brainwire.ToolSet) brainwire.ToolSet
	// Middleware, if set, wraps the whole HTTP API (e.g. the HTTP server
	// span). The handler it wraps has a Route method that names the
	// route template a request matches ("/api/inbox/{id}").
	Middleware func(http.Handler) http.Handler
	Logger     *slog.Logger
	// AgentName is the agent's display name, recorded as the classifier.
	AgentName string
	// Instructions, when set, replace the agent's instructions on every
	// run (`brainwire eval -instructions`); the agent's version is then
	// their hash.
	Instructions string
	// EvalRunID marks every capture as part of that evaluation.
	EvalRunID string
	// Shadow, when set, tries candidate instructions in shadow on the
	// captures it samples; whoever made it drains it.
	Shadow *shadow.Runner
	// AgentRefresh is how often ListenAndServe asks the provider to
	// describe its agent again (DefaultAgentRefresh when 0; negative:
	// only at start-up and on health checks).
	AgentRefresh time.Duration

	RunTimeout    time.Duration // per capture run; DefaultRunTimeout when 0
	MaxBodyBytes  int64         // JSON request bodies; DefaultMaxBodyBytes when 0
	MaxTextLength int           // capture text, in characters
	MaxAudioBytes int64         // voice uploads; DefaultMaxAudioBytes when 0
	MaxUploads    int           // voice uploads received at once; DefaultMaxUploads when 0
	UploadTimeout time.Duration // for a voice upload to arrive; DefaultUploadTimeout when 0
	KeepAlive     time.Duration // SSE comment interval; negative disables
	// H2C makes ListenAndServe accept HTTP/2 without TLS (prior
	// knowledge) beside HTTP/1.1, for an ingress or load balancer that
	// speaks HTTP/2 to the replica: its captures then share a few
	// connections, not one each.
	H2C bool
	// Simulator says that Provider is the built-in keyword simulator, not
	// a model: /health reports it.
	Simulator bool

	// NewID and Now are replaceable so replays are deterministic.
	NewID func() string
	Now   func() time.Time
}

// Server serves the capture API.
type Server struct {
	cfg     Config
	auth    *authenticator
	router  *mux.Router
	handler http.Handler // the router, wrapped in Config.Middleware
	log     *slog.Logger
	health  healthCache
	agent   *agentCache
	capture *capture.Service
	uploads chan struct{} // a slot per voice upload being received
}

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Provider == nil || cfg.Store == nil {
		return nil, errors.New("server: Provider and Store are required")
	}
	if len(cfg.Keys) == 0 {
		return nil, errors.New("server: at least one API key is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = brainwire.Observers(nil)
	}
	if cfg.AgentName == "" {
		cfg.AgentName = "Classifier"
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxTextLength <= 0 {
		cfg.MaxTextLength = DefaultMaxTextLength
	}
	if cfg.MaxAudioBytes <= 0 {
		cfg.MaxAudioBytes = DefaultMaxAudioBytes
	}
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = DefaultMaxUploads
	}
	if cfg.UploadTimeout <= 0 {
		cfg.UploadTimeout = DefaultUploadTimeout
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AgentRefresh == 0 {
		cfg.AgentRefresh = DefaultAgentRefresh
	}
	s := &Server{cfg: cfg, auth: newAuthenticator(cfg.Keys), log: cfg.Logger, agent: newAgentCache(cfg.Provider, cfg.Logger),
		uploads: make(chan struct{}, cfg.MaxUploads)}
	s.capture = capture.New(capture.Config{Provider: cfg.Provider, Store: cfg.Store, Blobs: cfg.Blobs, Transcriber: cfg.Transcriber,
		Observer: cfg.Observer, WrapTools: cfg.WrapTools, Logger: cfg.Logger, Agent: s.Agent, AgentName: cfg.AgentName,
		Instructions: cfg.Instructions, EvalRunID: cfg.EvalRunID, RunTimeout: cfg.RunTimeout, NewID: cfg.NewID, Now: cfg.Now,
		Shadow: cfg.Shadow})
	s.router = s.routes()
	s.handler = s.logFailures(s.router)
	if cfg.Middleware != nil {
		s.handler = cfg.Middleware(routed{Handler: s.handler, router: s.router})
	}
	return s, nil
}

// routed is the API as middleware sees it: a handler that can name the
// route a request matches.
type routed struct {
	http.Handler
	router *mux.Router
}

// Route returns the template of the route r matches, or "".
func (rt routed) Route(r *http.Request) string {
	var m mux.RouteMatch
	if rt.router.Match(r, &m) && m.Route != nil && m.MatchErr == nil {
		if tpl, err := m.Route.GetPathTemplate(); err == nil {
			return tpl
		}
	}
	return ""
}

func (s *Server) routes() *mux.Router {
	notFound := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not found"})
	})
	notAllowed := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method not allowed"})
	})
	r := mux.NewRouter()
	r.NotFoundHandler, r.MethodNotAllowedHandler = notFound, notAllowed
	// A path with "//", "." or ".." segments is not redirected to its
	// cleaned form: clients follow a 301 with GET, so a DELETE or PATCH
	// would come back as a 200 for something it did not do. Such a path
	// matches no route: 404.
	r.SkipClean(true)
	r.HandleFunc("/health", s.handleHealth).Methods(http.MethodGet)

	// Routes are registered on the root router, each wrapped in the key
	// check: mux subrouters answer 404 instead of 405 on a wrong method.
	api := func(path string, h http.HandlerFunc, methods ...string) {
		r.Handle(path, s.requireKey(h)).Methods(methods...)
	}
	// Capture routes take an Idempotency-Key (idempotency.go).
	api("/api/capture", s.idempotent(s.handleCapture), http.MethodPost)
	api("/api/capture/voice", s.idempotent(s.handleVoice), http.MethodPost)
	api("/api/capture/follow-up", s.idempotent(s.handleFollowUp), http.MethodPost)
	api("/api/inbox", s.handleListInbox, http.MethodGet)
	api("/api/inbox/{id}", s.handleGetInbox, http.MethodGet)
	api("/api/inbox/{id}", s.handleDeleteInbox, http.MethodDelete)
	api("/api/inbox/{id}/recategorize", s.handleRecategorize, http.MethodPost, http.MethodPatch)
	// AG-UI 1.0, for standard agent front ends (agui.go).
	api("/api/agui", s.idempotent(s.handleAGUI), http.MethodPost)
	// What earlier app builds call, in the v1 wire format (legacy.go).
	api("/api/ag-ui", s.idempotent(s.handleLegacyCapture), http.MethodPost)
	api("/api/ag-ui/follow-up", s.idempotent(s.handleLegacyFollowUp), http.MethodPost)
	api("/api/ag-ui/respond", s.handleLegacyRespond, http.MethodPost)
	api("/api/voice-capture", s.idempotent(s.handleLegacyVoice), http.MethodPost)
	return r
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.handler }

// Capture returns the service that runs the server's captures.
func (s *Server) Capture() *capture.Service { return s.capture }

type userKey struct{}

// requireKey answers 401 unless the request carries a configured API key
// (and no other),
// and puts the key's user id in the request context.
func (s *Server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := s.auth.user(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="brainwire"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": err.Error()})
			return
		}
		noteUser(w, user)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

func userFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// ListenAndServe serves on addr until ctx ends, then shuts down gracefully:
// it stops accepting, lets running captures finish (they are bounded by the
// run timeout) and closes what is left after that. It first asks the
// provider to describe its agent, and again every AgentRefresh.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	_, _ = s.RefreshAgent(ctx) // a failure is logged; captures run without a version until one succeeds
	refreshCtx, stopRefresh := context.WithCancel(ctx)
	defer stopRefresh()
	go s.agent.run(refreshCtx, s.cfg.AgentRefresh)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // bodies, incl. voice uploads; streams are writes
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if s.cfg.H2C {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	if ready != nil {
		ready(l.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: waiting for running captures", "grace", s.cfg.RunTimeout+5*time.Second)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.RunTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}
