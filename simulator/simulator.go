package simulator

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/brainwire/brainwire/foundry/foundrywire"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultChunkDelay   = 25 * time.Millisecond
	DefaultAgentID      = "asst_brainwire_sim"
	DefaultModel        = "brainwire-sim-keywords"
	DefaultInstructions = "You are the brainwire Classifier (offline simulator: keyword rules, not a language model). " +
		"Classify each capture into People, Projects, Ideas or Admin and call file_capture once."
	DefaultMaxThreads = 512
	// agentDescription is how the simulated agent describes itself.
	agentDescription = "Offline keyword classifier standing in for the Foundry Classifier agent. Not a language model."
	// ProjectPath is a project prefix clients may put before operation
	// paths; any /api/projects/<name> prefix is accepted.
	ProjectPath = "/api/projects/sim"
)

// Limits that bound memory and work per request.
const (
	maxBodyBytes      = 1 << 20
	maxMessageRunes   = 32 * 1024
	maxThreadMessages = 64
	maxThreadRuns     = 32
	maxStoredBytes    = 64 << 20 // message text, instructions and tools kept across all threads
	maxLongChunks     = 10000
	runLifetime       = 600 // seconds until an active run expires, as the service reports
	shutdownGrace     = 5 * time.Second
)

// Config configures a Simulator. The zero value is ready to use.
type Config struct {
	// ChunkDelay is the pause before each streamed message chunk. Zero
	// means DefaultChunkDelay; a negative value means no pause (tests).
	ChunkDelay time.Duration
	// Instructions are the agent's: reported by GET /assistants/{id} and
	// on runs that do not bring their own. Rule lines in them steer the
	// classifier (see instructions.go).
	Instructions string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// NewID returns a fresh id for prefix ("thread", "run", "step", "msg",
	// "call"); random ids like thread_AbC… when nil.
	NewID func(prefix string) string
	// MaxThreads bounds the threads kept, and the ADK face's sessions; the
	// least recently used go first. Zero means DefaultMaxThreads.
	MaxThreads int
	// Variation makes answers vary from run to run, reproducibly (the
	// zero value: they do not).
	Variation Variation
}

// Simulator is an offline stand-in for the Foundry Agent Service
// threads/runs API. It is an http.Handler; state lives in memory.
type Simulator struct {
	cfg        Config
	classifier *classifier // with Config.Instructions' rules
	ruled      bool        // Config.Instructions have rules of their own
	vary       *variation  // Config.Variation, with its counts

	mu      sync.Mutex
	threads *lru[*thread]
	created uint64            // threads created so far
	adk     *lru[*adkSession] // the ADK face's sessions (adk.go)

	// responses is the Responses API face's state (responses.go).
	responses *responsesState

	traffic traffic // serving.go
	refused refused // refuse.go
}

// New returns a Simulator with cfg's zero fields set to their defaults.
func New(cfg Config) *Simulator {
	if cfg.ChunkDelay == 0 {
		cfg.ChunkDelay = DefaultChunkDelay
	}
	if cfg.Instructions == "" {
		cfg.Instructions = DefaultInstructions
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.MaxThreads <= 0 {
		cfg.MaxThreads = DefaultMaxThreads
	}
	rules := parseRules(cfg.Instructions)
	return &Simulator{
		cfg:        cfg,
		classifier: newClassifier().withRules(rules),
		ruled:      len(rules) > 0,
		vary:       newVariation(cfg.Variation),
		threads:    newLRU[*thread](cfg.MaxThreads),
		adk:        newLRU[*adkSession](cfg.MaxThreads),
		responses:  newResponsesState(cfg.MaxThreads),
	}
}

// Serve answers HTTP on ln until ctx ends, then shuts down, giving open
// streams a few seconds before closing them. It speaks HTTP/1.1 and h2c
// (HTTP/2 without TLS, prior knowledge), and counts the connections it
// accepts (Stats).
func (s *Simulator) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		Protocols:         protocols(),
		ConnState:         s.countConns,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("simulator: serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("simulator: serve: %w", err)
	}
	return nil
}

// thread is one conversation. Guarded by Simulator.mu.
type thread struct {
	obj      foundrywire.Thread
	messages []*message
	runs     map[string]*run
	runOrder []string // oldest first
	seq      uint64   // order of creation, for listing threads
}

// message is a thread message plus what the agent learned about it.
type message struct {
	obj        foundrywire.Message
	text       string
	audioURL   string // from an "audio: <url>" line
	transcript *string
}

// run is one run plus the agent's memory of it. Guarded by Simulator.mu.
type run struct {
	obj      foundrywire.Run
	mem      runMemory
	classify *classifier // the run's instructions' rules applied

	pending   []*toolCall       // calls awaiting outputs
	toolStep  *foundrywire.Step // the step the pending calls belong to
	stepUsage foundrywire.Usage // the pending tool step's usage, reported when it completes
	context   int64             // tokens the agent has read or written so far
	usage     foundrywire.Usage // sum over completed steps
	active    *turn             // the turn a stream is delivering, if any
}

func (r *run) activeStatus() bool {
	switch r.obj.Status {
	case "queued", "in_progress", "requires_action", "cancelling":
		return true
	}
	return false
}

// newThread registers a thread; the caller holds s.mu.
func (s *Simulator) newThread(metadata json.RawMessage) *thread {
	th := &thread{
		obj: foundrywire.Thread{
			ID:            s.cfg.NewID("thread"),
			Object:        "thread",
			CreatedAt:     s.now(),
			Metadata:      orDefault(metadata, `{}`),
			ToolResources: json.RawMessage(`{}`),
		},
		runs: map[string]*run{},
	}
	s.created++
	th.seq = s.created
	s.threads.put(th.obj.ID, th, 0)
	return th
}

// addMessage appends a message, dropping the oldest beyond the per-thread
// cap; the caller holds s.mu.
func (s *Simulator) addMessage(th *thread, m *message) {
	th.messages = append(th.messages, m)
	s.threads.grow(th.obj.ID, len(m.text))
	for len(th.messages) > maxThreadMessages {
		old := th.messages[0]
		th.messages = th.messages[1:]
		s.threads.grow(th.obj.ID, -len(old.text))
	}
}

// setMessageText records an assistant message's final text.
func (s *Simulator) setMessageText(th *thread, m *message, text string) {
	d := len(text) - len(m.text)
	m.text = text
	s.threads.grow(th.obj.ID, d)
}

// runBytes is what a run holds beyond its thread's messages.
func runBytes(r *run) int {
	n := len(r.obj.Instructions)
	for _, t := range r.obj.Tools {
		n += len(t)
	}
	return n
}

// addRun registers a run, dropping the oldest finished runs beyond the cap.
func (s *Simulator) addRun(th *thread, r *run) {
	th.runs[r.obj.ID] = r
	th.runOrder = append(th.runOrder, r.obj.ID)
	s.threads.grow(th.obj.ID, runBytes(r))
	for len(th.runOrder) > maxThreadRuns {
		oldest := th.runs[th.runOrder[0]]
		if oldest != nil && oldest.activeStatus() {
			break
		}
		if oldest != nil {
			s.threads.grow(th.obj.ID, -runBytes(oldest))
		}
		delete(th.runs, th.runOrder[0])
		th.runOrder = th.runOrder[1:]
	}
}

// activeRun returns the thread's run that is not finished, if any.
func (th *thread) activeRun() *run {
	for _, id := range th.runOrder {
		if r := th.runs[id]; r != nil && r.activeStatus() {
			return r
		}
	}
	return nil
}

func (s *Simulator) now() int64 { return s.cfg.Now().Unix() }

func (s *Simulator) chunkDelay() time.Duration {
	if s.cfg.ChunkDelay < 0 {
		return 0
	}
	return s.cfg.ChunkDelay
}

// randomID returns prefix_ and 26 random characters, like the service's
// ids.
func randomID(prefix string) string { return prefix + "_" + rand.Text() }

func orDefault(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}

func ptr[T any](v T) *T { return &v }

// deref is what p points to, def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
