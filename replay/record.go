package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
)

// SetupIDBase offsets the ids of a setup capture (the capture a follow-up
// answers), so they never collide with the recorded capture's.
const SetupIDBase = 1000

// RecordConfig configures Record.
type RecordConfig struct {
	// Endpoint is the agent service's project endpoint.
	Endpoint   string
	AgentID    string
	APIVersion string
	// Auth adds credentials to requests; it sits above the recorder, so
	// the Authorization header is recorded (redacted) as sent.
	Auth func(http.RoundTripper) http.RoundTripper
	// Transport carries the requests under the recorder; a clone of
	// http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Secrets are redacted wherever they appear in the fixture.
	Secrets []string
	// Upstream labels the fixture ("simulator", "foundry").
	Upstream    string
	Transcriber brainwire.Transcriber
	// Dir holds the scratch SQLite store; a temporary directory when empty.
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
// same deterministic ids and clock as replay) against a live agent service,
// and records it. With setup, that capture runs first, unrecorded; a
// follow-up without an InboxItemID then answers the item setup filed.
func Record(ctx context.Context, cfg RecordConfig, setup *Request, req Request) (*Recording, error) {
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "brainwire-record-*")
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var mu sync.Mutex
	var fixtures []*recorder.Fixture
	rec, err := recorder.New(recorder.Config{
		Sink: recorder.SinkFunc(func(_ context.Context, fx *recorder.Fixture) error {
			mu.Lock()
			defer mu.Unlock()
			fixtures = append(fixtures, fx)
			return nil
		}),
		Sample:   1,
		Secrets:  cfg.Secrets,
		Upstream: cfg.Upstream,
		Logger:   cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	next := cfg.Transport
	if next == nil {
		next = http.DefaultTransport.(*http.Transport).Clone()
	}
	rt := rec.Transport(next)
	if cfg.Auth != nil {
		rt = cfg.Auth(rt)
	}
	env, err := NewEnv(ctx, EnvConfig{
		Dir:         dir,
		Endpoint:    cfg.Endpoint,
		HTTPClient:  &http.Client{Transport: rt},
		AgentID:     cfg.AgentID,
		APIVersion:  cfg.APIVersion,
		Observer:    rec,
		Transcriber: cfg.Transcriber,
		RunTimeout:  cfg.RunTimeout,
	})
	if err != nil {
		rec.Close(ctx)
		return nil, err
	}
	defer env.Close()

	var seed *recorder.InboxSeed
	if setup != nil {
		s := *setup
		s.IDBase = SetupIDBase
		resp, err := env.Send(ctx, s, nil)
		if err != nil {
			rec.Close(ctx)
			return nil, fmt.Errorf("setup capture: %w", err)
		}
		if resp.Status != http.StatusOK {
			rec.Close(ctx)
			return nil, fmt.Errorf("setup capture: the server answered %d: %s", resp.Status, resp.Body)
		}
		if req.Kind == brainwire.KindFollowUp && req.InboxItemID == "" {
			if seed, err = newestItem(ctx, env.Store()); err != nil {
				rec.Close(ctx)
				return nil, err
			}
			req.InboxItemID = seed.ID
		}
	}
	resp, err := env.Send(ctx, req, nil)
	if cerr := rec.Close(ctx); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fixtures) == 0 {
		return nil, errors.New("record: the capture was not recorded (see the log)")
	}
	fx := fixtures[len(fixtures)-1]
	switch req.Kind {
	case brainwire.KindVoice:
		name, typ := req.AudioName, req.AudioType
		if name == "" {
			name, typ = "capture.wav", "audio/wav"
		}
		fx.Capture.Audio = &recorder.Audio{Filename: name, ContentType: typ, Size: int64(len(req.Audio))}
	case brainwire.KindFollowUp:
		fu := &recorder.FollowUp{Round: max(req.FollowUpRound, 1)}
		if seed != nil {
			fu.Item = *seed
		} else if fx.Capture.FollowUp != nil {
			fu.Item = fx.Capture.FollowUp.Item
		}
		fu.Item.ID = req.InboxItemID
		fx.Capture.FollowUp = fu
		recorder.NewRedactor(cfg.Secrets...).Fixture(fx)
	}
	return &Recording{Fixture: fx, Response: resp}, nil
}

// newestItem returns the most recent inbox item as a seed.
func newestItem(ctx context.Context, st brainwire.Store) (*recorder.InboxSeed, error) {
	page, err := st.ListInbox(ctx, UserID, brainwire.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("reading the setup capture's inbox item: %w", err)
	}
	if len(page.Items) == 0 {
		return nil, errors.New("the setup capture filed no inbox item to follow up on")
	}
	it := page.Items[0]
	if it.Status != brainwire.StatusMisunderstood {
		return nil, fmt.Errorf("the setup capture was filed as %s, not misunderstood: there is nothing to follow up", it.Status)
	}
	s := &recorder.InboxSeed{ID: it.ID, RawText: it.RawText, Title: it.Title, Source: it.Source, FoundryThreadID: it.FoundryThreadID}
	if m := it.ClassificationMeta; m != nil {
		s.Bucket, s.Confidence = m.Bucket, m.Confidence
	}
	return s, nil
}
