package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/protocol/capturev2"
	"github.com/brainwire/brainwire/tools"
)

type captureRequest struct {
	Text     string `json:"text"`
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
}

func (s *Server) handleCapture(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		s.handleVoice(w, r)
		return
	}
	var req captureRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "text is required"))
		return
	}
	if n := utf8.RuneCountInString(text); n > s.cfg.MaxTextLength {
		writeError(w, brainwire.Errorf(brainwire.ETooLarge, "text is %d characters; the limit is %d", n, s.cfg.MaxTextLength))
		return
	}
	ids, err := s.captureIDs(req.ThreadID, req.RunID)
	if err != nil {
		writeError(w, err)
		return
	}
	user := userFrom(r.Context())
	set := tools.New(s.toolDeps(), tools.Capture{UserID: user, Source: brainwire.KindText, RawText: text})
	s.runCapture(w, r, capture{
		kind:  brainwire.KindText,
		text:  text,
		ids:   ids,
		user:  user,
		run:   brainwire.RunRequest{Message: text},
		tools: set,
	})
}

// decodeJSON reads a JSON object body within the size limit. Unknown
// fields are rejected so a client's typo is a clear 400, not ignored.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		return &brainwire.Error{Code: errUnsupportedMedia, Message: "Content-Type must be application/json"}
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return brainwire.Errorf(brainwire.ETooLarge, "request body is over %d bytes", s.cfg.MaxBodyBytes)
		}
		return brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: more than one JSON value")
	}
	return nil
}

// errUnsupportedMedia is a transport-level code only the HTTP layer uses.
const errUnsupportedMedia = "unsupported_media_type"

// captureIDs echoes the client's ids or makes new ones.
func (s *Server) captureIDs(threadID, runID string) (adapter.Config, error) {
	for name, v := range map[string]string{"thread_id": threadID, "run_id": runID} {
		if len(v) > 128 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return adapter.Config{}, brainwire.Errorf(brainwire.EInvalid, "%s must be at most 128 printable characters without spaces", name)
		}
	}
	if threadID == "" {
		threadID = "thread-" + s.cfg.NewID()
	}
	if runID == "" {
		runID = "run-" + s.cfg.NewID()
	}
	return adapter.Config{ThreadID: threadID, RunID: runID}, nil
}

// capture is one capture to run through the pipeline.
type capture struct {
	kind  brainwire.CaptureKind
	text  string // typed text, for telemetry
	ids   adapter.Config
	user  string
	run   brainwire.RunRequest
	tools *tools.Set
}

// runCapture streams one capture to the phone: STEP_START at once, then
// whatever the agent's run produces, through the adapter and the encoder,
// until COMPLETE. The run is bounded by the run timeout; a client that goes
// away cancels it (the provider then cancels the upstream run).
func (s *Server) runCapture(w http.ResponseWriter, r *http.Request, c capture) {
	c.ids.Kind = c.kind
	c.run.Tools = c.tools
	if s.cfg.WrapTools != nil {
		c.run.Tools = s.cfg.WrapTools(c.tools)
	}
	start := s.cfg.Now()
	ctx, obs := s.cfg.Observer.StartCapture(r.Context(), brainwire.CaptureInfo{
		Kind: c.kind, ThreadID: c.ids.ThreadID, RunID: c.ids.RunID, UserID: c.user,
		Text: c.text, UpstreamThreadID: c.run.ThreadID, Start: start,
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := s.log.With("run_id", c.ids.RunID, "thread_id", c.ids.ThreadID, "kind", c.kind, "user", c.user)
	log.Info("capture started")

	stream := startStream(w, s.cfg.KeepAlive)
	defer stream.close()
	p := pipeline{
		adapter: adapter.New(c.ids),
		stream:  stream,
		obs:     obs,
		// A client that cannot be written to is gone: stop the run.
		onWriteError: cancel,
	}
	p.emit(p.adapter.Start(p.events[:0]))

	runCtx, cancelRun := context.WithTimeout(ctx, s.cfg.RunTimeout)
	defer cancelRun()
	var runErr error
	for ev, err := range s.cfg.Provider.Run(runCtx, c.run) {
		if err != nil {
			runErr = err
			if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				runErr = fmt.Errorf("run timed out after %s: %w", s.cfg.RunTimeout, context.DeadlineExceeded)
			}
			break
		}
		obs.ProviderEvent(ev)
		p.emit(p.adapter.Handle(ev, p.events[:0]))
		if p.adapter.Done() {
			break
		}
	}
	p.emit(p.adapter.Finish(runErr, p.events[:0]))
	obs.End(runErr)

	attrs := []any{"outcome", p.adapter.Outcome().String(), "reasoning_chunks", p.adapter.Chunks(),
		"duration", s.cfg.Now().Sub(start).Round(time.Millisecond)}
	switch {
	case ctx.Err() != nil && r.Context().Err() != nil:
		log.Warn("capture ended: client went away", attrs...)
	case runErr != nil:
		log.Error("capture ended: run failed", append(attrs, "error", runErr)...)
	default:
		log.Info("capture ended", attrs...)
	}
}

// pipeline routes one capture's events: all of them to the observer, all
// but reasoning through the encoder to the phone.
type pipeline struct {
	adapter      *adapter.Adapter
	encoder      capturev2.Encoder
	stream       *eventStream
	obs          brainwire.CaptureObserver
	onWriteError func()

	events []brainwire.CaptureEvent // reused between calls
	buf    []byte                   // reused between calls
}

func (p *pipeline) emit(evs []brainwire.CaptureEvent) {
	p.events = evs
	p.buf = p.buf[:0]
	for _, ev := range evs {
		p.obs.CaptureEvent(ev)
		if ev.Type != brainwire.CaptureReasoning {
			p.buf = p.encoder.Encode(p.buf, ev)
		}
	}
	if len(p.buf) == 0 {
		return
	}
	if err := p.stream.write(p.buf); err != nil {
		p.onWriteError()
	}
}
