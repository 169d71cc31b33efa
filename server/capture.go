package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
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
	fp, err := s.decodeCapture(w, r, &req, true)
	if err != nil {
		writeError(w, err)
		return
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "text is required"))
		return
	}
	if err := brainwire.CheckText("text", text); err != nil {
		writeError(w, err)
		return
	}
	if n := utf8.RuneCountInString(text); n > s.cfg.MaxTextLength {
		writeError(w, brainwire.Errorf(brainwire.ETooLarge, "text is %d characters; the limit is %d", n, s.cfg.MaxTextLength))
		return
	}
	c, err := s.newCapture(r, brainwire.KindText, req.ThreadID, req.RunID)
	if err != nil {
		writeError(w, err)
		return
	}
	c.Text = text
	enc := func(brainwire.Capture) encoder { return capturev2.Encoder{} }
	if hold, ok := s.holdKey(w, r, c, fp, enc); ok {
		s.runCapture(w, r, c, enc(c), hold)
	}
}

// decodeJSON reads a JSON object body within the size limit. Unknown
// fields are rejected so a client's typo is a clear 400, not ignored.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decodeJSONBody(w, r, v, true)
}

// decodeJSONBody is decodeJSON, strict about unknown fields or not: the
// routes of earlier app builds take what those builds sent, extras and
// all.
func (s *Server) decodeJSONBody(w http.ResponseWriter, r *http.Request, v any, strict bool) error {
	// Read whole (bodies are small) so that bytes that are not UTF-8 are
	// refused, not silently turned into U+FFFD by the decoder.
	body, err := readJSONBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeJSONBytes(body, v, strict)
}

// decodeCapture is decodeJSONBody for a capture route: it also returns
// the request's fingerprint for its Idempotency-Key, if it has one.
func (s *Server) decodeCapture(w http.ResponseWriter, r *http.Request, v any, strict bool) (*fingerprint, error) {
	body, err := readJSONBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	if err := decodeJSONBytes(body, v, strict); err != nil {
		return nil, err
	}
	fp := newFingerprint(r)
	fp.add(body)
	return fp, nil
}

// decodeJSONBytes decodes a JSON object body read whole.
func decodeJSONBytes(body []byte, v any, strict bool) error {
	if !utf8.Valid(body) {
		return brainwire.Errorf(brainwire.EInvalid, "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: more than one JSON value")
	}
	return nil
}

// preallocBody is the most readJSONBody sets aside before the bytes arrive.
const preallocBody = 64 << 10

// readJSONBody reads a whole application/json body of at most limit bytes,
// for every JSON route. A body that declares more is refused before any of
// it is read, and one that turns out longer is cut off at the limit, so
// no more than limit bytes are ever held. Failures say what went wrong
// without the connection's details: a body that stalls past the server's
// read deadline is a 408.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		return nil, &brainwire.Error{Code: errUnsupportedMedia, Message: "Content-Type must be application/json"}
	}
	tooLarge := func() error { return brainwire.Errorf(brainwire.ETooLarge, "request body is over %d bytes", limit) }
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	// The declared length sizes the buffer up to a point: beyond it, the
	// buffer grows with what arrives, so a client that declares a large
	// body and sends nothing holds no memory for it.
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, preallocBody)) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, tooLarge()
		}
		return nil, bodyReadError(err)
	}
	return buf.Bytes(), nil
}

// newCapture starts a capture of the request's user, echoing the client's
// ids or making new ones.
func (s *Server) newCapture(r *http.Request, kind brainwire.CaptureKind, threadID, runID string) (brainwire.Capture, error) {
	for name, v := range map[string]string{"thread_id": threadID, "run_id": runID} {
		if utf8.RuneCountInString(v) > maxIDChars || strings.ContainsFunc(v, notIDRune) {
			return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "%s must be at most %d printable characters without spaces", name, maxIDChars)
		}
	}
	if threadID == "" {
		threadID = "thread-" + s.cfg.NewID()
	}
	if runID == "" {
		runID = "run-" + s.cfg.NewID()
	}
	return brainwire.Capture{Kind: kind, UserID: userFrom(r.Context()), ThreadID: threadID, RunID: runID}, nil
}

// maxIDChars bounds a client's thread and run ids, in characters as the
// 400 says: at most four times as many bytes, which the body limit bounds
// anyway.
const maxIDChars = 128

// notIDRune reports whether r may not be part of a thread or run id: ids
// are printable characters without spaces, so controls (C0 and C1), format
// characters (such as U+202E, which turns the text after it around),
// spaces of any kind, line and paragraph separators, private-use and
// unassigned code points are refused.
func notIDRune(r rune) bool { return r == ' ' || !unicode.IsPrint(r) }

// runRequest is what the agent is asked to do for c.
func runRequest(c brainwire.Capture) brainwire.RunRequest {
	req := brainwire.RunRequest{UserID: c.UserID, Message: c.Text}
	switch {
	case c.FollowUp != nil:
		req.ThreadID = c.UpstreamThreadID()
		req.AdditionalInstructions = fmt.Sprintf(followUpInstructions, c.FollowUp.Round, MaxFollowUpRounds)
	case c.Kind == brainwire.KindVoice:
		req.Message = fmt.Sprintf(voiceMessage, c.AudioURL)
	}
	return req
}

// encoder writes a capture's events in the wire protocol of the route the
// client called (capturev2, v1, agui). It may keep state across the
// capture's events: one per capture.
type encoder interface {
	Encode(dst []byte, ev brainwire.CaptureEvent) []byte
}

// runCapture streams one capture to the client: STEP_START at once, then
// whatever the agent's run produces, through the adapter and enc, until
// COMPLETE. Every protocol runs this same pipeline, with the same limits,
// telemetry and recording. The agent loop runs the agent, and the tools it
// asks for. The run is bounded by the run timeout; a client that goes away
// cancels it (the upstream run is then stopped).
// It returns how the capture ended, and keeps it under the request's
// Idempotency-Key when hold is not nil (holdKey): callers claim the key
// and call this directly, so that no frame of theirs sits under the
// capture's stack for its whole run.
func (s *Server) runCapture(w http.ResponseWriter, r *http.Request, c brainwire.Capture, enc encoder, hold *keyHold) brainwire.CaptureResult {
	c.Agent, c.EvalRunID = s.Agent(), s.cfg.EvalRunID
	run := runRequest(c)
	run.Instructions = s.cfg.Instructions
	start := s.cfg.Now()
	ctx, obs := s.cfg.Observer.StartCapture(r.Context(), c)
	// The filing keeps where the run is traced, for later corrections.
	c.Trace, _ = brainwire.RunTraceFrom(ctx)
	set := tools.New(s.toolDeps(), c)
	if hold != nil {
		set.FileUnder(hold.key)
	}
	var toolSet brainwire.ToolSet = set
	if s.cfg.WrapTools != nil {
		toolSet = s.cfg.WrapTools(toolSet)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := s.log.With("run_id", c.RunID, "thread_id", c.ThreadID, "kind", c.Kind, "user", c.UserID)
	log.Info("capture started")

	stream := startStream(w, s.cfg.KeepAlive)
	defer stream.close()
	p := pipeline{
		adapter: adapter.New(c),
		encoder: enc,
		stream:  stream,
		obs:     obs,
		client:  r.Context(),
		// A client that cannot be written to is gone: stop the run.
		onWriteError: cancel,
		onOutcome: func(res *brainwire.CaptureResult) {
			res.TimeToOutcome = s.cfg.Now().Sub(start)
		},
	}
	p.adapter.Keep = func(res *brainwire.CaptureResult) error { return keepUnresolved(ctx, set, res, log) }
	p.emit(p.adapter.Start(p.events[:0]))

	runCtx, cancelRun := context.WithTimeout(ctx, s.cfg.RunTimeout)
	defer cancelRun()
	var runErr error
	for ev, err := range s.loop.Run(runCtx, run, toolSet) {
		if err != nil {
			runErr = err
			if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				runErr = fmt.Errorf("run timed out after %s: %w", s.cfg.RunTimeout, context.DeadlineExceeded)
			}
			// The client hears it now, not once the run is closed
			// upstream (a cancel call of its own).
			p.emit(p.adapter.Finish(runErr, p.events[:0]))
			break
		}
		obs.ProviderEvent(ev)
		p.emit(p.adapter.Handle(ev, p.events[:0]))
		if p.adapter.Done() {
			break
		}
	}
	p.emit(p.adapter.Finish(runErr, p.events[:0]))
	// A client that left before COMPLETE was sent went away; one that
	// hangs up right after it (as the app does) did not, though by the
	// time the run is logged its request has ended either way.
	wentAway := p.leftEarly || p.writeFailed || (!p.completed && r.Context().Err() != nil)
	res := *p.adapter.Result()
	obs.End(res)
	if c.FollowUp != nil {
		s.followUpCorrection(r.Context(), c, &res)
	}

	attrs := []any{"outcome", res.Outcome, "reasoning_chunks", res.ReasoningChunks,
		"duration", s.cfg.Now().Sub(start).Round(time.Millisecond)}
	switch {
	case wentAway:
		log.Warn("capture ended: client went away", attrs...)
	case runErr != nil:
		log.Error("capture ended: run failed", append(attrs, "error", runErr)...)
	case res.Outcome == brainwire.OutcomeError:
		// The service said why in its stream (an error event, a failed
		// run): the phone has its words, the log has them too.
		log.Error("capture ended: run failed", append(attrs, "error_type", res.ErrorType, "error", res.ErrorMessage)...)
	default:
		log.Info("capture ended", attrs...)
	}
	hold.ended(r.Context(), c, res, set.KeySettled())
	return res
}

// keepUnresolved keeps a capture whose run filed nothing as an unresolved
// inbox item, for a person to file, before its outcome goes out: the
// outcome then names the item. A voice capture's words are transcribed
// first if the agent never did; when they cannot be, the Failure ends the
// capture, keeping nothing. When the store fails, the outcome goes out
// without an item rather than turning a run that ended well into an ERROR.
func keepUnresolved(ctx context.Context, set *tools.Set, res *brainwire.CaptureResult, log *slog.Logger) error {
	id, err := set.KeepUnresolved(ctx, res.UpstreamThreadID)
	var f *brainwire.Failure
	switch {
	case errors.As(err, &f):
		return err
	case err != nil:
		log.Error("capture unresolved and not kept in the inbox", "error", err)
		return err
	}
	res.InboxItemID = id
	return nil
}

// pipeline routes one capture's events: all of them to the observer and to
// the encoder, which writes what its protocol shows.
type pipeline struct {
	adapter      *adapter.Adapter
	encoder      encoder
	stream       *eventStream
	obs          brainwire.CaptureObserver
	onWriteError func()
	onOutcome    func(*brainwire.CaptureResult)

	events []brainwire.CaptureEvent // reused between calls
	buf    []byte                   // reused between calls
	// client is the request's context, done once the client has gone.
	// writeFailed is set once a write to the client failed: it is gone;
	// completed once COMPLETE was written, leftEarly if the client had
	// gone by the time it was to be.
	client                            context.Context
	writeFailed, completed, leftEarly bool
}

func (p *pipeline) emit(evs []brainwire.CaptureEvent) {
	p.events = evs
	p.buf = p.buf[:0]
	complete := false
	for _, ev := range evs {
		switch ev.Type {
		case brainwire.CaptureComplete:
			complete = true
		case brainwire.CaptureOutcome:
			p.onOutcome(ev.Result)
		case brainwire.CaptureError:
			p.onOutcome(p.adapter.Result())
		}
		p.obs.CaptureEvent(ev)
		p.buf = p.encoder.Encode(p.buf, ev)
	}
	if len(p.buf) == 0 {
		return
	}
	if complete && p.client.Err() != nil {
		p.leftEarly = true
	}
	if err := p.stream.write(p.buf); err != nil {
		p.writeFailed = true
		p.onWriteError()
		return
	}
	p.completed = p.completed || complete
}
