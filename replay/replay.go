package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/shadow"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

// defaultSeedID is the inbox item a follow-up files onto when its
// recording did not name one.
const defaultSeedID = "00000000-0000-4000-8000-900000000001"

// Options configures Run.
type Options struct {
	// Speed scales the recorded timing: 0 replays at once, 1 in real
	// time, 2 twice as fast.
	Speed float64
	// Dir holds the SQLite store (EnvConfig.Dir).
	Dir string
	// Out receives the phone's SSE bytes as they arrive.
	Out io.Writer
	// Observer also watches the capture, e.g. a telemetry pipeline.
	Observer brainwire.Observer
	Logger   *slog.Logger
	// RunTimeout bounds the capture run (server.DefaultRunTimeout when 0).
	RunTimeout time.Duration
	// Protocol is the protocol the capture is asked in; CaptureV2 when "".
	Protocol Protocol
	// Shadow, when set, are candidate instructions run in shadow on the
	// capture, as serve runs them at sample 1: after the phone's stream,
	// against the simulator (the recording has no candidate's calls).
	// Only an agent brainwire defines can be shadowed.
	Shadow string
}

// ErrNotShadowable is Run's error for a fixture whose agent a shadow cannot
// try candidates on: one brainwire does not define (a named agent, an
// assistant, an ADK app).
var ErrNotShadowable = errors.New("only an agent brainwire defines can be shadowed")

// Result is what a replayed capture produced.
type Result struct {
	// Status and SSE are the server's answer to the client, byte for
	// byte, in the protocol it asked in.
	Status int
	SSE    []byte
	// Summary is what the capture's observers saw.
	Summary Summary
	// Shadow is how the shadow ended, with Options.Shadow: "kept", the
	// reason it was dropped, or "" when the capture filed nothing to try.
	Shadow string
}

// Run replays a fixture through the full capture path: the fixture's
// exchanges are served by an Upstream on loopback, an Env sends the
// fixture's capture as the phone would, and the server's answer is
// returned. The error reports requests that did not match the recording
// (with a diff) and recorded requests that never came; the Result is
// returned with it when the capture ran.
func Run(ctx context.Context, fx *recorder.Fixture, opts Options) (*Result, error) {
	up := NewUpstream(fx.Exchanges, opts.Speed)
	hs := httptest.NewServer(up)
	defer hs.Close()
	defer up.Close()

	api, err := apiOf(fx)
	if err != nil {
		return nil, err
	}
	sum := &summaryObserver{}
	obs := brainwire.Observers{sum}
	if opts.Observer != nil {
		obs = append(obs, opts.Observer)
	}
	var shadowCfg *shadow.Config
	ended := shadowEnd(make(chan string, 1))
	if opts.Shadow != "" {
		if !api.defined {
			return nil, fmt.Errorf("replaying %s: %w", fx.Name, ErrNotShadowable)
		}
		sim := simulator.New(simulator.Config{ChunkDelay: -1})
		up.Beyond = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("api-key", "replay") // the simulator asks for a key
			sim.ServeHTTP(w, r)
		})
		shadowCfg = &shadow.Config{Instructions: opts.Shadow, Sample: 1, Timeout: time.Minute}
		obs = append(obs, ended)
	}
	tr, err := newTracing(api.telemetry)
	if err != nil {
		return nil, err
	}
	defer tr.shutdown(context.WithoutCancel(ctx))
	blobURL := recordedBlobURL(fx)
	var urlFor func(string) string
	if blobURL != "" {
		urlFor = func(string) string { return blobURL }
	}
	env, err := NewEnv(ctx, EnvConfig{
		Dir: opts.Dir,
		Wiring: wiring.Config{
			Server: server.Config{
				Observer:    obs,
				Blobs:       newMemoryBlobStore(urlFor),
				Transcriber: recordedTranscriber(fx),
				Logger:      opts.Logger,
				RunTimeout:  opts.RunTimeout,
			},
			Agent:     api.agent(hs.URL),
			Transport: hs.Client().Transport,
			// As the recording did, waiting as the recorded time goes.
			Retry:     retry.Policy{Retries: fx.Retries, Sleep: up.sleep},
			Telemetry: tr.tel,
		},
		UserID: api.user,
		Shadow: shadowCfg,
	})
	if err != nil {
		return nil, err
	}
	defer env.Close()

	req := RequestFor(fx)
	req.Protocol = opts.Protocol
	if fu := fx.Capture.FollowUp; fu != nil {
		seed := fu.Item
		seed.ID = req.InboxItemID
		if err := env.Seed(ctx, seed); err != nil {
			return nil, err
		}
	}
	resp, err := env.Send(ctx, req, opts.Out)
	if err != nil {
		return nil, err
	}
	shadowed := ""
	if opts.Shadow != "" && req.InboxItemID == "" && sum.s.Outcome.Filed() {
		// The shadow starts once the stream has ended: wait for its end.
		select {
		case shadowed = <-ended:
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("replaying %s in shadow: the shadow never ended", fx.Name)
		}
	}
	env.Close() // waits for the server's spans to end
	// The capture has ended, and with it what the observer is told.
	res := &Result{Status: resp.Status, SSE: resp.Body, Summary: sum.s, Shadow: shadowed}
	res.Summary.Spans = tr.lines()
	if err := up.Err(); err != nil {
		return res, fmt.Errorf("replaying %s: %w", fx.Name, err)
	}
	return res, nil
}

// RequestFor returns the phone's request of a fixture's capture.
func RequestFor(fx *recorder.Fixture) Request {
	c := fx.Capture
	req := Request{Kind: c.Kind, Text: c.Text}
	if c.Audio != nil {
		req.AudioName, req.AudioType = c.Audio.Filename, c.Audio.ContentType
	}
	if fu := c.FollowUp; fu != nil {
		req.InboxItemID, req.FollowUpRound = fu.Item.ID, fu.Round
		if req.InboxItemID == "" {
			req.InboxItemID = defaultSeedID
		}
	}
	return req
}

// GoldenPath returns the golden file of the fixture at path's stream in
// protocol p.
func GoldenPath(fixturePath string, p Protocol) string {
	return goldenBase(fixturePath) + p.GoldenSuffix()
}

func goldenBase(fixturePath string) string {
	return strings.TrimSuffix(fixturePath, filepath.Ext(fixturePath))
}

// TelemetryGoldenSuffix is the telemetry golden file's suffix, after the
// fixture's name; each protocol's stream has its own (Protocol.GoldenSuffix).
const TelemetryGoldenSuffix = ".telemetry.golden"

// Golden is one golden file of a fixture and what it must hold.
type Golden struct {
	Path string
	Data []byte
}

// Goldens replays fx, the fixture at path, in every protocol and returns
// its golden files: the phone's stream, the telemetry summary, then the
// other protocols' streams. The error reports replays that did not match
// the recording; the goldens are returned with it when every protocol ran.
func Goldens(ctx context.Context, fx *recorder.Fixture, path string, opts Options) ([]Golden, error) {
	var out []Golden
	var errs []error
	for _, p := range Protocols {
		opts.Protocol = p
		res, err := Run(ctx, fx, opts)
		if res == nil {
			return nil, err
		}
		errs = append(errs, err)
		out = append(out, Golden{GoldenPath(path, p), res.SSE})
		if p == CaptureV2 {
			out = append(out, Golden{goldenBase(path) + TelemetryGoldenSuffix, res.Summary.Text()})
		}
	}
	return out, errors.Join(errs...)
}

// Check replays the fixture at path and compares what it makes with its
// golden files (Goldens). It returns a readable report of every
// difference, or "" when the output matches; err is a failure to replay at
// all.
func Check(ctx context.Context, path string, opts Options) (report string, err error) {
	fx, err := recorder.Load(path)
	if err != nil {
		return "", err
	}
	goldens, runErr := Goldens(ctx, fx, path, opts)
	if goldens == nil {
		return "", runErr
	}
	var b strings.Builder
	if runErr != nil {
		b.WriteString(runErr.Error() + "\n")
	}
	for _, g := range goldens {
		want, err := os.ReadFile(g.Path)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(&b, "%s: no golden file (record the fixture again, or run the golden suite with GOLDIE_UPDATE=1)\n", g.Path)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading golden: %w", err)
		}
		b.WriteString(Diff(string(want), string(g.Data), g.Path, "replay"))
	}
	return b.String(), nil
}

// shadowEnd hears how a replay's shadow ended: "kept" or a drop reason.
type shadowEnd chan string

func (e shadowEnd) StartShadow(ctx context.Context, c brainwire.Capture, _ brainwire.TraceRef) (context.Context, brainwire.CaptureObserver) {
	return brainwire.Observers{}.StartCapture(ctx, c) // watches nothing of the run
}

// StartCapture implements brainwire.Observer: production's runs are the
// summary's to watch.
func (e shadowEnd) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return brainwire.Observers{}.StartCapture(ctx, c)
}
func (e shadowEnd) ShadowKept(context.Context, brainwire.ShadowTrial) { e <- "kept" }
func (e shadowEnd) ShadowDropped(_ context.Context, reason string)    { e <- reason }
