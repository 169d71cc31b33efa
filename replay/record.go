package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/wiring"
)

// setupIDBase offsets the ids of a setup capture (the capture a follow-up
// answers), so they never collide with the recorded capture's.
const setupIDBase = 1000

// RecordConfig configures Record.
type RecordConfig struct {
	// Agent opens the provider (wiring.Config.Agent), with its credentials
	// above the transport it is given, so that the Authorization header
	// is recorded (redacted) as sent.
	Agent func(http.RoundTripper) (brainwire.Provider, error)
	// Transport carries the requests under the recorder; agenthttp.NewTransport
	// when nil.
	Transport http.RoundTripper
	// Faults are injected into the service's answers, under the recorder.
	Faults Faults
	// Secrets are redacted wherever they appear in the fixture.
	Secrets []string
	// Upstream labels the fixture ("simulator", "foundry").
	Upstream string
	// Retries is how many times a refused call is sent again; the
	// fixture says it, and replay does the same.
	Retries     int
	Transcriber brainwire.Transcriber
	// Dir holds the scratch SQLite store (EnvConfig.Dir).
	Dir string
	// Logger receives recording failures; the server's own logs are off.
	Logger     *slog.Logger
	RunTimeout time.Duration
}

// Recording is one recorded capture.
type Recording struct {
	// Fixture is the recording, redacted.
	Fixture *recorder.Fixture
	// Response is what the phone got while it was recorded.
	Response *Response
}

// Record runs one capture through the real capture path (an Env with the
// same wiring, deterministic ids and clock as replay) against a live agent
// service, and records it. With setup, that capture runs first,
// unrecorded; a follow-up without an InboxItemID then answers the item
// setup filed.
func Record(ctx context.Context, cfg RecordConfig, setup *Request, req Request) (*Recording, error) {
	var saved []*recorder.Fixture
	rec, err := recorder.New(recorder.Config{
		// Save runs on the recorder's writer, which Close waits for.
		Sink: recorder.SinkFunc(func(_ context.Context, fx *recorder.Fixture) error {
			saved = append(saved, fx)
			return nil
		}),
		Sample:   1,
		Secrets:  cfg.Secrets,
		Upstream: cfg.Upstream,
		Retries:  cfg.Retries,
		Logger:   cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	resp, err := recordCapture(ctx, cfg, rec, setup, req)
	if cerr := rec.Close(ctx); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if len(saved) == 0 {
		return nil, errors.New("record: the capture was not recorded (see the log)")
	}
	fx := saved[len(saved)-1]
	if req.Kind == brainwire.KindVoice {
		// The upload as the phone made it; the recorder only saw its URL.
		name, typ := req.AudioName, req.AudioType
		if name == "" {
			name, typ = "capture.wav", "audio/wav"
		}
		fx.Capture.Audio = &recorder.Audio{Filename: name, ContentType: typ, Size: int64(len(req.Audio))}
	}
	if n := cfg.Faults.SplitUTF8; n > 0 {
		if err := splitInsideRunes(fx, n); err != nil {
			return nil, err
		}
	}
	return &Recording{Fixture: fx, Response: resp}, nil
}

// recordCapture runs setup (if any) and req through an Env that rec
// records, and returns what the phone got for req.
func recordCapture(ctx context.Context, cfg RecordConfig, rec *recorder.Recorder, setup *Request, req Request) (*Response, error) {
	base := cfg.Transport
	if base == nil {
		base = agenthttp.NewTransport()
	}
	env, err := NewEnv(ctx, EnvConfig{
		Dir: cfg.Dir,
		Wiring: wiring.Config{
			Server:    server.Config{Transcriber: cfg.Transcriber, RunTimeout: cfg.RunTimeout},
			Agent:     cfg.Agent,
			Transport: cfg.Faults.transport(base),
			Retry:     retry.Policy{Retries: cfg.Retries},
			Recorder:  rec,
		},
	})
	if err != nil {
		return nil, err
	}
	defer env.Close()
	if setup != nil {
		s := *setup
		s.IDBase = setupIDBase
		resp, err := env.Send(ctx, s, nil)
		if err != nil {
			return nil, fmt.Errorf("setup capture: %w", err)
		}
		if resp.Status != http.StatusOK {
			return nil, fmt.Errorf("setup capture: the server answered %d: %s", resp.Status, resp.Body)
		}
		if req.Kind == brainwire.KindFollowUp && req.InboxItemID == "" {
			if req.InboxItemID, err = misunderstoodItem(ctx, env.Store()); err != nil {
				return nil, err
			}
		}
	}
	return env.Send(ctx, req, nil)
}

// misunderstoodItem returns the id of the most recent inbox item, which
// must be misunderstood: the one a follow-up answers.
func misunderstoodItem(ctx context.Context, st brainwire.Store) (string, error) {
	page, err := st.ListInbox(ctx, UserID, brainwire.ListOptions{Limit: 1})
	if err != nil {
		return "", fmt.Errorf("reading the setup capture's inbox item: %w", err)
	}
	if len(page.Items) == 0 {
		return "", errors.New("the setup capture filed no inbox item to follow up on")
	}
	it := page.Items[0]
	if it.Status != brainwire.StatusMisunderstood {
		return "", fmt.Errorf("the setup capture was filed as %s, not misunderstood: there is nothing to follow up", it.Status)
	}
	return it.ID, nil
}
