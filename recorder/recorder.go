package recorder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultMaxBytes  = 8 << 20
	DefaultQueueSize = 16
	// maxRequestBody bounds the request body kept per exchange; the agent
	// service's requests are small JSON documents.
	maxRequestBody = 1 << 20
	saveTimeout    = 30 * time.Second
)

// Sink keeps finished recordings. Save is called from the Recorder's own
// goroutine, one recording at a time, with secrets already redacted.
type Sink interface {
	Save(ctx context.Context, fx *Fixture) error
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(ctx context.Context, fx *Fixture) error

// Save implements Sink.
func (f SinkFunc) Save(ctx context.Context, fx *Fixture) error { return f(ctx, fx) }

// DirSink writes each recording atomically to Dir/<name>.json.
type DirSink struct {
	Dir string
}

// Save implements Sink.
func (d DirSink) Save(_ context.Context, fx *Fixture) error {
	return WriteFile(filepath.Join(d.Dir, FileName(fx.Name)), fx)
}

// FileName returns the file name of a fixture called name: unsafe
// characters become '-', and ".json" is appended.
func FileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), ".-")
	if s == "" {
		s = "fixture"
	}
	return s + ".json"
}

// Config configures a Recorder.
type Config struct {
	// Sink keeps the recordings. Required.
	Sink Sink
	// Sample is the share of captures recorded, from 0 (none) to 1 (all).
	Sample float64
	// Secrets are values redacted wherever they appear, such as a static
	// bearer token or an API key.
	Secrets []string
	// MaxBytes bounds one capture's recording in memory; a capture that
	// goes over it is not recorded. DefaultMaxBytes when 0.
	MaxBytes int
	// QueueSize bounds the finished recordings waiting for the Sink; when
	// it is full a recording is dropped. DefaultQueueSize when 0.
	QueueSize int
	// Upstream labels what the recordings were made against ("foundry",
	// "simulator").
	Upstream string
	// Retries is how many times the server sends a refused call again
	// (wiring.Config.Retry), written in each recording so that replay
	// does the same.
	Retries int
	// Logger receives recording failures; they never reach the capture.
	Logger *slog.Logger
	// Rand returns a number in [0,1) for sampling; math/rand/v2 when nil.
	// It is called concurrently.
	Rand func() float64
}

// Recorder records capture runs: it is the brainwire.Observer that sees
// each capture's input, tools and end, and (through Transport) the
// http.RoundTripper that sees its exchanges with the agent service; the
// two meet through the context the observer returns, which the server
// passes to the provider. Finished recordings are redacted and handed to
// the Sink by one background goroutine; Close flushes them.
type Recorder struct {
	cfg   Config
	red   *Redactor
	log   *slog.Logger
	queue chan *session
	done  chan struct{}

	mu     sync.Mutex
	closed bool
}

var _ brainwire.Observer = (*Recorder)(nil)

// New returns a Recorder and starts its writer; call Close when done.
func New(cfg Config) (*Recorder, error) {
	if cfg.Sink == nil {
		return nil, errors.New("recorder: a Sink is required")
	}
	if cfg.Sample < 0 || cfg.Sample > 1 {
		return nil, fmt.Errorf("recorder: sample %v is outside 0..1", cfg.Sample)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	r := &Recorder{
		cfg:   cfg,
		red:   NewRedactor(cfg.Secrets...),
		log:   cfg.Logger,
		queue: make(chan *session, cfg.QueueSize),
		done:  make(chan struct{}),
	}
	go r.writeLoop()
	return r, nil
}

// Close stops taking recordings and waits until the queued ones are saved
// or ctx ends.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("recorder: recordings still being written: %w", ctx.Err())
	}
}

// StartCapture implements brainwire.Observer: a sampled capture gets a
// recording, carried in the returned context.
func (r *Recorder) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	if r.cfg.Sample <= 0 || (r.cfg.Sample < 1 && r.cfg.Rand() >= r.cfg.Sample) {
		return ctx, noCapture{}
	}
	s := &session{r: r, info: c, start: time.Now(), budget: r.cfg.MaxBytes}
	return context.WithValue(ctx, sessionKey{}, s), s
}

type sessionKey struct{}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

type noCapture struct{}

func (noCapture) ProviderEvent(brainwire.AgentEvent)  {}
func (noCapture) CaptureEvent(brainwire.CaptureEvent) {}
func (noCapture) End(brainwire.CaptureResult)         {}

// enqueue hands a finished recording to the writer without waiting.
func (r *Recorder) enqueue(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.log.Warn("recording dropped: the recorder is closed", "run_id", s.info.RunID)
		return
	}
	select {
	case r.queue <- s:
	default:
		r.log.Warn("recording dropped: too many recordings waiting to be written", "run_id", s.info.RunID)
	}
}

// writeLoop builds, redacts and writes finished recordings, off the
// captures' paths.
func (r *Recorder) writeLoop() {
	defer close(r.done)
	for s := range r.queue {
		r.save(s.fixture())
	}
}

// save redacts and writes one recording. Failures are logged: recording
// is best effort and never affects a capture.
func (r *Recorder) save(fx *Fixture) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("recording not written: the sink panicked", "fixture", fx.Name, "panic", fmt.Sprint(v))
		}
	}()
	r.red.Fixture(fx)
	b, err := Marshal(fx)
	if err != nil {
		r.log.Error("recording not written", "fixture", fx.Name, "error", err)
		return
	}
	if r.red.Leaks(b) {
		r.log.Error("recording not written: a configured secret survived redaction", "fixture", fx.Name)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := r.cfg.Sink.Save(ctx, fx); err != nil {
		r.log.Error("recording not written", "fixture", fx.Name, "error", err)
		return
	}
	r.log.Debug("recording written", "fixture", fx.Name, "exchanges", len(fx.Exchanges))
}

// session is the recording of one capture. It is the capture's
// brainwire.CaptureObserver and, through the context, the transport's
// handle. The transport reads bodies on the provider's goroutine, so
// everything is guarded by mu.
type session struct {
	r     *Recorder
	info  brainwire.Capture
	start time.Time

	mu        sync.Mutex
	exchanges []*exchange
	tools     []ToolRun
	round     int
	result    Result
	budget    int
	overflow  bool
	ended     bool
	end       time.Time
}

// recording reports whether the session still records; mu is held.
func (s *session) recording() bool { return !s.ended && !s.overflow }

// charge takes n bytes from the budget; past it the whole recording is
// dropped, since half a run cannot be replayed. mu is held.
func (s *session) charge(n int) bool {
	s.budget -= n
	if s.budget >= 0 {
		return true
	}
	if !s.overflow {
		s.overflow = true
		s.exchanges, s.tools = nil, nil
		s.r.log.Warn("recording dropped: the capture is over the recording limit",
			"run_id", s.info.RunID, "limit_bytes", s.r.cfg.MaxBytes)
	}
	return false
}

// begin starts recording a request, or returns nil when the session no
// longer records.
func (s *session) begin(req *http.Request) *exchange {
	body := requestBody(req, maxRequestBody)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording() || !s.charge(len(body)+len(req.URL.RawQuery)+headerSize(req.Header)) {
		return nil
	}
	e := &exchange{s: s, start: now}
	e.rec = Exchange{
		AtMs: now.Sub(s.start).Milliseconds(),
		Request: Request{
			Method: req.Method,
			Path:   req.URL.Path,
			Query:  flattenQuery(req.URL.Query()),
			Header: flatten(req.Header),
		},
	}
	e.rec.Request.Body, e.rec.Request.BodyText = jsonOrText(body)
	s.exchanges = append(s.exchanges, e)
	return e
}

func flattenQuery(q url.Values) map[string]string {
	if len(q) == 0 {
		return nil
	}
	m := make(map[string]string, len(q))
	for k, v := range q {
		m[k] = strings.Join(v, ",")
	}
	return m
}

// ProviderEvent implements brainwire.CaptureObserver: it keeps the tools
// the server ran, numbered by the requires_action pause they answered.
func (s *session) ProviderEvent(ev brainwire.AgentEvent) {
	switch ev.Kind {
	case brainwire.AgentRunStatus:
		if ev.Status != brainwire.RunRequiresAction {
			return
		}
		s.mu.Lock()
		s.round++
		s.mu.Unlock()
	case brainwire.AgentToolResult:
		t := ToolRun{CallID: ev.Tool.ID, Name: ev.Tool.Name, IsError: ev.Result.IsError}
		t.Arguments, t.ArgumentsText = jsonOrText(ev.Tool.Arguments)
		t.Output, t.OutputText = jsonOrText([]byte(ev.Result.Output))
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.recording() && s.charge(len(ev.Tool.Arguments)+len(ev.Result.Output)) {
			t.Round = s.round
			s.tools = append(s.tools, t)
		}
	}
}

// CaptureEvent implements brainwire.CaptureObserver; the recording needs
// only the result at the end.
func (s *session) CaptureEvent(brainwire.CaptureEvent) {}

// End implements brainwire.CaptureObserver: the recording is finished and
// queued for the writer. Nothing here waits or builds anything.
func (s *session) End(res brainwire.CaptureResult) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.end = true, time.Now()
	s.result = Result{Outcome: string(res.Outcome), ReasoningChunks: res.ReasoningChunks}
	if res.Err != nil {
		s.result.Error = res.Err.Error()
	}
	overflow := s.overflow
	s.mu.Unlock()
	if !overflow {
		s.r.enqueue(s)
	}
}

// fixture builds the recording of an ended session.
func (s *session) fixture() *Fixture {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.info
	fx := &Fixture{
		Version:    Version,
		Name:       s.start.UTC().Format("20060102T150405Z") + "-" + c.RunID,
		RecordedAt: s.start.UTC().Truncate(time.Second),
		Upstream:   s.r.cfg.Upstream,
		Retries:    s.r.cfg.Retries,
		Capture: Capture{
			Kind:             c.Kind,
			Text:             c.Text,
			ThreadID:         c.ThreadID,
			RunID:            c.RunID,
			UpstreamThreadID: c.UpstreamThreadID(),
		},
		Exchanges: make([]Exchange, 0, len(s.exchanges)),
		Tools:     s.tools,
		Result:    s.result,
	}
	for _, e := range s.exchanges {
		if !e.done && e.rec.Response != nil {
			// The body was still open when the capture ended: keep what
			// the reader got.
			e.rec.Response.Closed = true
			e.end(s.end)
		}
		fx.Exchanges = append(fx.Exchanges, e.build())
	}
	s.exchanges, s.tools = nil, nil
	fx.Capture.Audio, fx.Capture.FollowUp = audioOf(c), followUpOf(c)
	return fx
}

// audioOf describes a voice capture's upload by its URL: the bytes are
// not kept.
func audioOf(c brainwire.Capture) *Audio {
	if c.Kind != brainwire.KindVoice {
		return nil
	}
	name := "audio.wav"
	if u, err := url.Parse(c.AudioURL); err == nil && path.Ext(u.Path) != "" {
		name = path.Base(u.Path)
	}
	return &Audio{Filename: name, ContentType: mime.TypeByExtension(path.Ext(name))}
}

// followUpOf is the item a follow-up answers, as replay must seed it.
func followUpOf(c brainwire.Capture) *FollowUp {
	fu := c.FollowUp
	if fu == nil {
		return nil
	}
	it := fu.Item
	seed := InboxSeed{ID: it.ID, RawText: it.RawText, Title: it.Title, Source: it.Source, UpstreamThreadID: it.UpstreamThreadID}
	if m := it.ClassificationMeta; m != nil {
		seed.Bucket, seed.Confidence = m.Bucket, m.Confidence
	}
	return &FollowUp{Round: fu.Round, Item: seed}
}
