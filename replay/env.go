package replay

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/shadow"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

// The phone's credentials in an Env.
const (
	APIKey = "replay-api-key-0123456789"
	UserID = "replay-user"
)

// Clock is the time every capture in an Env runs at.
func Clock() time.Time { return time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC) }

// ID returns the n-th deterministic id: shaped like the UUIDs the server
// makes in production, so outputs have the same shape.
func ID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// EnvConfig configures an Env. Wiring.Agent is required.
type EnvConfig struct {
	// Dir holds the Env's SQLite store; a temporary directory, removed by
	// Close, when empty.
	Dir string
	// Wiring is what the Env's server is made of, as serve's is: the
	// agent's opener and transport, telemetry and a recorder to
	// instrument and record it as they do serve, and in Server the
	// observer, tool wrapper, blob store (in memory when nil),
	// transcriber, logger and run timeout. The Env sets the rest of
	// Server itself, whatever Wiring says: Keys (APIKey, for UserID),
	// Store, AgentName, KeepAlive (off), NewID and Now (deterministic).
	Wiring wiring.Config
	// UserID is the user APIKey maps to; UserID (the constant) when
	// empty. A replay takes the recorded one when the agent service saw it.
	UserID string
	// Shadow, when set, runs candidate instructions in shadow as serve
	// does; its Store is the Env's.
	Shadow *shadow.Config
}

// Env is the capture server as the golden suite runs it: wired by
// wiring.New as serve is, behind a loopback HTTP listener, with deterministic
// ids and a fixed clock and its own SQLite store. Keep-alive comments are
// off, so the bytes of a capture depend only on what the upstream
// answered.
type Env struct {
	user      string
	temp      string // a directory of its own, removed by Close
	store     *sqlite.Store
	shadow    *shadow.Runner
	ids       *idSource
	http      *httptest.Server
	closeOnce sync.Once
	closeErr  error
}

// NewEnv starts an Env; Close it when done.
func NewEnv(ctx context.Context, cfg EnvConfig) (*Env, error) {
	if cfg.Wiring.Agent == nil {
		return nil, errors.New("replay: EnvConfig needs Wiring.Agent")
	}
	temp := ""
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "brainwire-replay-*")
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		cfg.Dir, temp = d, d
	}
	w := cfg.Wiring
	if w.Server.Blobs == nil {
		w.Server.Blobs = newMemoryBlobStore(nil)
	}
	store, err := sqlite.Open(ctx, filepath.Join(cfg.Dir, "replay.db"))
	if err != nil {
		os.RemoveAll(temp)
		return nil, fmt.Errorf("opening the replay store: %w", err)
	}
	if cfg.UserID == "" {
		cfg.UserID = UserID
	}
	ids := &idSource{}
	w.Server.Keys = server.Keys{APIKey: cfg.UserID}
	w.Server.Store = store
	w.Server.AgentName = AgentName
	w.Server.KeepAlive = -1
	w.Server.NewID, w.Server.Now = ids.next, Clock
	e := &Env{user: cfg.UserID, store: store, ids: ids, temp: temp}
	if cfg.Shadow != nil {
		sc := *cfg.Shadow
		sc.Store = store
		e.shadow = shadow.New(sc)
		w.Server.Shadow = e.shadow
	}
	srv, err := wiring.New(w)
	if err != nil {
		store.Close()
		os.RemoveAll(temp)
		return nil, fmt.Errorf("capture server: %w", err)
	}
	e.http = httptest.NewServer(srv.Handler())
	return e, nil
}

// Close stops the server, once every request it is serving has ended, and
// closes the store.
func (e *Env) Close() error {
	e.closeOnce.Do(func() {
		e.http.Close()
		if e.shadow != nil {
			e.shadow.Drain()
		}
		e.closeErr = e.store.Close()
		if e.temp != "" {
			os.RemoveAll(e.temp)
		}
	})
	return e.closeErr
}

// Store is the Env's store.
func (e *Env) Store() brainwire.Store { return e.store }

// Request is one capture as the phone sends it.
type Request struct {
	Kind brainwire.CaptureKind
	// Text is the typed text, or a follow-up's answer.
	Text string
	// Audio is a voice upload.
	Audio     []byte
	AudioName string
	AudioType string
	// InboxItemID and FollowUpRound make a follow-up.
	InboxItemID   string
	FollowUpRound int
	// IDBase offsets this capture's ids: its n-th id is ID(IDBase+n).
	// Every capture restarts its ids, so a capture's output does not
	// depend on what ran before it.
	IDBase int
	// Protocol is the protocol the capture is asked in; CaptureV2 when "".
	Protocol Protocol
}

// Response is what the server answered.
type Response struct {
	Status int
	// Body is the SSE stream (or a JSON error), byte for byte.
	Body []byte
}

// Send makes one capture request and reads the answer to its end,
// copying it to out as it arrives when out is not nil.
func (e *Env) Send(ctx context.Context, req Request, out io.Writer) (*Response, error) {
	enc, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.http.URL+enc.route, bytes.NewReader(enc.body))
	if err != nil {
		return nil, fmt.Errorf("capture request: %w", err)
	}
	hr.Header.Set("Authorization", "Bearer "+APIKey)
	hr.Header.Set("Content-Type", enc.contentType)
	hr.Header.Set("Accept", "text/event-stream")
	e.ids.reset(req.IDBase + enc.ids)
	resp, err := e.http.Client().Do(hr)
	if err != nil {
		return nil, fmt.Errorf("capture request: %w", err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	w := io.Writer(&buf)
	if out != nil {
		w = io.MultiWriter(&buf, out)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return nil, fmt.Errorf("reading the capture stream: %w", err)
	}
	return &Response{Status: resp.StatusCode, Body: buf.Bytes()}, nil
}

// encodePhoneRequest is req as the phone sends it, in capture-v2.
func encodePhoneRequest(req Request) (route, ctype string, body []byte, err error) {
	switch req.Kind {
	case brainwire.KindText, "":
		body, err = json.Marshal(map[string]string{"text": req.Text})
		return "/api/capture", "application/json", body, err
	case brainwire.KindFollowUp:
		body, err = json.Marshal(map[string]any{
			"inbox_item_id":   req.InboxItemID,
			"follow_up_text":  req.Text,
			"follow_up_round": max(req.FollowUpRound, 1),
		})
		return "/api/capture/follow-up", "application/json", body, err
	case brainwire.KindVoice:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		name, typ, audio := voiceUpload(req)
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", multipart.FileContentDisposition("file", name))
		h.Set("Content-Type", typ)
		part, err := mw.CreatePart(h)
		if err != nil {
			return "", "", nil, fmt.Errorf("voice upload: %w", err)
		}
		part.Write(audio)
		if err := mw.Close(); err != nil {
			return "", "", nil, fmt.Errorf("voice upload: %w", err)
		}
		return "/api/capture/voice", mw.FormDataContentType(), buf.Bytes(), nil
	}
	return "", "", nil, fmt.Errorf("replay: unknown capture kind %q", req.Kind)
}

// voiceUpload is the audio file of a voice request: its own, or a silent
// WAV when the bytes do not matter.
func voiceUpload(req Request) (name, typ string, audio []byte) {
	name, typ, audio = req.AudioName, req.AudioType, req.Audio
	if name == "" {
		name = "capture.wav"
	}
	if typ == "" {
		typ = "audio/wav"
	}
	if len(audio) == 0 {
		audio = SilentWAV(8000)
	}
	return name, typ, audio
}

// SilentWAV returns n samples of 16-bit mono silence at 16 kHz: a real
// audio file for uploads whose bytes do not matter.
func SilentWAV(n int) []byte {
	data := 2 * n
	b := make([]byte, 44+data)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 1) // mono
	binary.LittleEndian.PutUint32(b[24:], 16000)
	binary.LittleEndian.PutUint32(b[28:], 32000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	return b
}

// Seed puts an inbox item in the store, as an earlier capture would have.
func (e *Env) Seed(ctx context.Context, s recorder.InboxSeed) error {
	source := s.Source
	if source == "" {
		source = brainwire.KindText
	}
	bucket := s.Bucket
	if !brainwire.ValidBucket(bucket) {
		bucket = ""
	}
	_, err := e.store.File(ctx, brainwire.Filing{
		UserID:     e.user,
		NewInboxID: s.ID,
		RawText:    s.RawText,
		Title:      s.Title,
		Source:     source,
		Status:     brainwire.StatusMisunderstood,
		Classification: brainwire.Classification{
			Bucket: bucket, Confidence: s.Confidence, ClassifiedBy: "Classifier",
			AgentChain: []string{"Classifier"}, ClassifiedAt: Clock(),
		},
		UpstreamThreadID: s.UpstreamThreadID,
		Now:              Clock(),
	})
	if err != nil {
		return fmt.Errorf("seeding inbox item %s: %w", s.ID, err)
	}
	return nil
}

// idSource hands out ID(base+1), ID(base+2), ... for one capture.
type idSource struct {
	mu      sync.Mutex
	base, n int
}

func (s *idSource) next() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return ID(s.base + s.n)
}

func (s *idSource) reset(base int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.n = base, 0
}
