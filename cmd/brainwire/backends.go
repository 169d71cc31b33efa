package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/azureblob"
	"github.com/brainwire/brainwire/cosmos"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/transcription"
)

// backends are the dependencies `serve` wires into the server.
type backends struct {
	agent       func(http.RoundTripper) (brainwire.Provider, error)
	store       brainwire.Store
	blobs       brainwire.BlobStore
	transcriber brainwire.Transcriber
	// closers run in reverse order on shutdown.
	closers []func()
}

func (b *backends) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// credential returns DefaultAzureCredential, created once on first use, so
// a configuration that needs no Entra token never touches it.
type credential = func() (azcore.TokenCredential, error)

func newCredential() credential {
	return sync.OnceValues(func() (azcore.TokenCredential, error) { return azidentity.NewDefaultAzureCredential(nil) })
}

// upstream stacks the retries and telemetry of a client of an upstream service
// (telemetry counts them).
func openBackends(ctx context.Context, cfg config, getenv func(string) string, initDB bool, upstream func(retry.Policy, http.RoundTripper) http.RoundTripper, log *slog.Logger) (_ *backends, err error) {
	b := &backends{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	cred := newCredential()
	if b.agent, err = openAgent(ctx, cfg, cred, b, log); err != nil {
		return nil, err
	}
	if b.store, err = openStore(ctx, cfg, getenv, cred, initDB, log); err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { _ = b.store.Close() })
	if b.blobs, err = openBlobs(ctx, cfg, getenv, cred, log); err != nil {
		return nil, err
	}
	if local, ok := b.blobs.(*localblob.Store); ok {
		b.closers = append(b.closers, sweepAudio(ctx, local, audioMaxAge(cfg), log))
	}
	if b.transcriber, err = openTranscriber(getenv, cred, upstream, log); err != nil {
		return nil, err
	}
	return b, nil
}

// startSimulator serves the offline simulator on a loopback port until
// stop is called, and returns its base URL: the ADK face's, and the
// Foundry face's with simulator.ProjectPath after it.
func startSimulator(ctx context.Context, sc simulator.Config) (baseURL string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("starting the simulator: %w", err)
	}
	sim := simulator.New(sc)
	simCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = sim.Serve(simCtx, l) }()
	return "http://" + l.Addr().String(), func() { cancel(); <-done }, nil
}

// adkAuth sets ADK_AUTH_HEADER on every request to the ADK API server;
// nil when it is not set.
func adkAuth(header string) func(http.RoundTripper) http.RoundTripper {
	name, value, err := adk.ParseHeader(header)
	if header == "" || err != nil { // loadConfig rejected a malformed one
		return nil
	}
	return func(next http.RoundTripper) http.RoundTripper { return agenthttp.NewHeaderTransport(name, value, next) }
}

// headerName is the name of a "Name: value" header, for logs: never the
// value.
func headerName(header string) string {
	name, _, _ := strings.Cut(header, ":")
	return strings.TrimSpace(name)
}

// foundryAuth authorizes agent service requests with a static token, or
// else with an Entra ID token from cred.
func foundryAuth(token string, cred credential) (func(http.RoundTripper) http.RoundTripper, error) {
	if token != "" {
		return func(next http.RoundTripper) http.RoundTripper { return foundry.NewStaticTokenTransport(token, next) }, nil
	}
	c, err := cred()
	if err != nil {
		return nil, fmt.Errorf("Foundry credentials (set AZURE_AI_PROJECT_TOKEN or configure Entra ID): %w", err)
	}
	return func(next http.RoundTripper) http.RoundTripper { return foundry.NewTokenTransport(c, next) }, nil
}

// sqlitePath is where the SQLite store lives.
func sqlitePath(cfg config) string { return filepath.Join(cfg.DataDir, "brainwire.db") }

func openStore(ctx context.Context, cfg config, getenv func(string) string, cred credential, initDB bool, log *slog.Logger) (brainwire.Store, error) {
	endpoint, err := envURL(getenv, "COSMOS_ENDPOINT")
	if err != nil {
		return nil, err
	}
	if endpoint == "" {
		if initDB {
			log.Info("-init-db: the SQLite store creates its schema on open")
		}
		path := sqlitePath(cfg)
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		log.Info("store: SQLite", "path", path)
		return st, nil
	}
	cc := cosmos.Config{Endpoint: endpoint, Key: getenv("COSMOS_KEY"), Database: getenv("COSMOS_DATABASE"), Logger: log}
	if cc.Key == "" {
		c, err := cred()
		if err != nil {
			return nil, fmt.Errorf("Cosmos DB credentials (set COSMOS_KEY or configure Entra ID): %w", err)
		}
		cc.Credential = c
	}
	st, err := cosmos.Open(ctx, cc)
	if err != nil {
		return nil, err
	}
	if initDB {
		if err := st.EnsureContainers(ctx); err != nil {
			st.Close()
			return nil, fmt.Errorf("-init-db: %w", err)
		}
		log.Info("-init-db: database and containers are in place")
	}
	// A database the server cannot work with (missing containers, an
	// Inbox without its composite index) is refused now, with what to run,
	// rather than found out by every inbox listing. A check that cannot be
	// made (network, credentials) does not stop the start: /health tells.
	if err := st.CheckSetup(ctx); err != nil {
		if errors.Is(err, cosmos.ErrNotSetUp) {
			st.Close()
			return nil, err
		}
		log.Warn("store: could not check the Cosmos DB database's setup", "error", err)
	}
	log.Info("store: Azure Cosmos DB", "endpoint", endpoint, "database", st.Database())
	return st, nil
}

func openBlobs(ctx context.Context, cfg config, getenv func(string) string, cred credential, log *slog.Logger) (brainwire.BlobStore, error) {
	container := cmp.Or(getenv("AZURE_STORAGE_CONTAINER"), "voice-captures")
	var bc azureblob.Config
	switch {
	case getenv("AZURE_STORAGE_CONNECTION_STRING") != "":
		var err error
		if bc, err = azureblob.ConfigFromConnectionString(getenv("AZURE_STORAGE_CONNECTION_STRING"), container); err != nil {
			return nil, fmt.Errorf("AZURE_STORAGE_CONNECTION_STRING: %w", err)
		}
	case getenv("AZURE_STORAGE_ACCOUNT_URL") != "":
		accountURL, err := envURL(getenv, "AZURE_STORAGE_ACCOUNT_URL")
		if err != nil {
			return nil, err
		}
		c, err := cred()
		if err != nil {
			return nil, fmt.Errorf("Blob Storage credentials: %w", err)
		}
		bc = azureblob.Config{AccountURL: accountURL, Container: container, TokenCredential: c}
	default:
		dir := filepath.Join(cfg.DataDir, "audio")
		st, err := localblob.New(dir)
		if err != nil {
			return nil, err
		}
		log.Info("audio storage: local directory", "dir", dir)
		return st, nil
	}
	st, err := azureblob.New(bc)
	if err != nil {
		return nil, err
	}
	if err := st.EnsureContainer(ctx); err != nil {
		return nil, fmt.Errorf("audio container %q: %w", container, err)
	}
	log.Info("audio storage: Azure Blob Storage", "container", container)
	return st, nil
}

// audioMaxAge is the longest a voice capture keeps its audio in the blob
// store: the upload (its file grows until the upload timeout), then the
// agent run, then a minute's margin for deleting it and for clocks.
func audioMaxAge(cfg config) time.Duration {
	return cfg.Server.UploadTimeout + cfg.Server.RunTimeout + time.Minute
}

// sweepAudio deletes the audio that voice captures of a process that died
// left in the local directory, once at start (before the server listens)
// and then every maxAge until the returned stop is called. Only files older
// than maxAge go: replicas sharing the directory may be running captures.
func sweepAudio(ctx context.Context, st *localblob.Store, maxAge time.Duration, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sweep := func() {
		n, err := st.Sweep(ctx, time.Now().Add(-maxAge))
		if n > 0 {
			log.Info("audio storage: deleted audio of voice captures that never finished", "dir", st.Dir(), "files", n, "older_than", maxAge.String())
		}
		if err != nil && ctx.Err() == nil {
			log.Error("audio storage: sweeping audio left by earlier captures", "error", err)
		}
	}
	sweep()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(maxAge)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				sweep()
			}
		}
	}()
	return func() { cancel(); <-done }
}

func openTranscriber(getenv func(string) string, cred credential, upstream func(retry.Policy, http.RoundTripper) http.RoundTripper, log *slog.Logger) (brainwire.Transcriber, error) {
	endpoint, err := envURL(getenv, "AZURE_OPENAI_ENDPOINT")
	if err != nil {
		return nil, err
	}
	if endpoint == "" {
		log.Info("transcription: not configured (set AZURE_OPENAI_ENDPOINT); voice captures are refused with 503")
		return nil, nil
	}
	tc := transcription.Config{
		Endpoint:   endpoint,
		Deployment: getenv("AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT"),
		APIVersion: getenv("AZURE_OPENAI_API_VERSION"),
		APIKey:     getenv("AZURE_OPENAI_API_KEY"),
	}
	if tc.Deployment == "" {
		return nil, errors.New("AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT is required with AZURE_OPENAI_ENDPOINT")
	}
	// An ISO-639-1 code, two lower-case letters, the form the
	// transcription API takes.
	if tc.Language, err = envParse(getenv, "AZURE_OPENAI_TRANSCRIPTION_LANGUAGE", "", "an ISO-639-1 language code (en, de, fr)", func(l string) (string, bool) {
		return l, len(l) == 2 && 'a' <= l[0] && l[0] <= 'z' && 'a' <= l[1] && l[1] <= 'z'
	}); err != nil {
		return nil, err
	}
	if tc.APIKey == "" {
		c, err := cred()
		if err != nil {
			return nil, fmt.Errorf("Azure OpenAI credentials (set AZURE_OPENAI_API_KEY or configure Entra ID): %w", err)
		}
		tc.TokenCredential = c
	}
	retries, err := loadRetries(getenv)
	if err != nil {
		return nil, err
	}
	// A refused upload is sent again from the audio blob (its GetBody).
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: upstream(retry.Policy{Retries: retries}, http.DefaultTransport)}
	t, err := transcription.New(tc, hc)
	if err != nil {
		return nil, err
	}
	log.Info("transcription: Azure OpenAI", "endpoint", endpoint, "deployment", tc.Deployment)
	return t, nil
}
