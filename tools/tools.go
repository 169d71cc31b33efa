// Package tools implements the tools the agent calls and the server runs:
// file_capture (files a capture into the store) and transcribe_audio (turns
// the capture's uploaded audio into text). A Set is made per capture, so the
// tools know whose capture it is and what was uploaded; it also keeps a
// capture the agent left unfiled (KeepUnresolved).
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/textcut"
)

// Deps are the backends the tools use; shared by every capture.
type Deps struct {
	Store       brainwire.Store
	Blobs       brainwire.BlobStore   // nil: voice captures are not possible
	Transcriber brainwire.Transcriber // nil: transcription is not configured
	NewID       func() string
	Now         func() time.Time
	// AgentName is recorded as the classifier of what the agent files.
	AgentName string
}

// Set is the ToolSet of one capture. Safe for concurrent use.
type Set struct {
	deps    Deps
	capture brainwire.Capture

	mu         sync.Mutex // serializes filing so one capture files once
	filedID    string
	transcript string
	// key is the request's claim on its Idempotency-Key (FileUnder);
	// settled says a filing settled it.
	key     *brainwire.IdempotencyKey
	settled bool
}

// New returns the tools for one capture.
func New(deps Deps, c brainwire.Capture) *Set {
	if deps.NewID == nil || deps.Now == nil {
		panic("tools: Deps.NewID and Deps.Now are required")
	}
	return &Set{deps: deps, capture: c}
}

// FileUnder makes the capture's filing settle k, the request's claim on
// its Idempotency-Key, with what the phone is told (brainwire.Filing.Key);
// a new capture is filed as the key's item (k.ItemID). Call it before the
// run starts.
func (s *Set) FileUnder(k brainwire.IdempotencyKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = &k
}

// KeySettled reports whether a filing settled the key FileUnder gave.
func (s *Set) KeySettled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settled
}

// FiledItemID returns the inbox item the capture was filed as, if any.
func (s *Set) FiledItemID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filedID
}

// Definitions returns the tools offered to the agent. transcribe_audio is
// offered only to captures that uploaded audio.
func (s *Set) Definitions() []brainwire.ToolDefinition {
	defs := []brainwire.ToolDefinition{fileCaptureDef}
	if s.capture.AudioURL != "" {
		defs = append(defs, transcribeAudioDef)
	}
	return defs
}

// Call runs one tool. Failures become error results for the agent.
func (s *Set) Call(ctx context.Context, call brainwire.ToolCall) brainwire.ToolResult {
	var out any
	var err error
	switch call.Name {
	case brainwire.ToolFileCapture:
		out, err = s.fileCapture(ctx, call)
	case brainwire.ToolTranscribeAudio:
		out, err = s.transcribeAudio(ctx, call)
	default:
		err = &toolError{Code: "unknown_tool", Message: fmt.Sprintf("no tool named %q", call.Name)}
	}
	res := brainwire.ToolResult{CallID: call.ID, Name: call.Name}
	if err != nil {
		var te *toolError
		if !errors.As(err, &te) {
			te = &toolError{Code: "tool_failed", Message: err.Error()}
		}
		out, res.IsError, res.ErrorCode, res.Superseded = te, true, te.Code, te.superseded
	}
	b, mErr := json.Marshal(out)
	if mErr != nil {
		b, res.IsError, res.ErrorCode = []byte(`{"error":"tool_failed","message":"unencodable result"}`), true, "tool_failed"
	}
	if f, ok := out.(*brainwire.FileCaptureResult); ok && !res.IsError {
		res.Filed = f
	}
	res.Output = string(b)
	var te *toolError
	if errors.As(err, &te) && te.fatal != nil {
		res.Fatal = te.fatal
	}
	return res
}

// toolError is the JSON the agent receives when a tool fails.
type toolError struct {
	Code    string   `json:"error"`
	Message string   `json:"message"`
	Valid   []string `json:"valid_values,omitempty"`
	// superseded is ToolResult.Superseded: for the server, not the agent.
	superseded string
	// err is the failure, when it was not the tool's own.
	err error
	// fatal is ToolResult.Fatal: the capture cannot go on.
	fatal *brainwire.Failure
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }
func (e *toolError) Unwrap() error { return e.err }

type fileCaptureArgs struct {
	Text       string   `json:"text"`
	Bucket     string   `json:"bucket"`
	Confidence *float64 `json:"confidence"`
	Status     string   `json:"status"`
	Title      string   `json:"title"`
	Question   string   `json:"question"`
}

func (s *Set) fileCapture(ctx context.Context, call brainwire.ToolCall) (any, error) {
	var a fileCaptureArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return nil, &toolError{Code: "invalid_arguments", Message: "arguments are not a JSON object: " + err.Error()}
	}
	switch a.Status {
	case brainwire.StatusClassified, brainwire.StatusPending, brainwire.StatusMisunderstood:
	default:
		return nil, &toolError{Code: "invalid_status", Message: fmt.Sprintf("unknown status %q", a.Status),
			Valid: []string{brainwire.StatusClassified, brainwire.StatusPending, brainwire.StatusMisunderstood}}
	}
	conf := 0.0
	if a.Confidence != nil {
		conf = *a.Confidence
	}
	if conf < 0 || conf > 1 {
		return nil, &toolError{Code: "invalid_confidence", Message: fmt.Sprintf("confidence %v is outside 0..1", conf)}
	}
	status := a.Status
	if status != brainwire.StatusMisunderstood {
		if !brainwire.ValidBucket(a.Bucket) {
			return nil, &toolError{Code: "invalid_bucket", Message: fmt.Sprintf("unknown bucket %q", a.Bucket), Valid: brainwire.Buckets}
		}
		// The threshold is the server's rule, not the agent's call.
		status = brainwire.StatusClassified
		if conf < brainwire.ConfidenceThreshold {
			status = brainwire.StatusPending
		}
	} else if !brainwire.ValidBucket(a.Bucket) {
		a.Bucket = ""
	}

	if f := s.words(ctx); f != nil {
		return nil, &toolError{Code: "transcription_failed", Message: "the capture's audio could not be transcribed", err: f, fatal: f}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filedID != "" {
		return nil, &toolError{Code: "already_filed", Message: "this capture was already filed as item " + s.filedID}
	}
	f := s.filing(status, a.Bucket, conf, s.rawText(a.Text), call.ThreadID)
	f.Title = titleFor(a.Title, f.RawText)
	f.NewRecordID = s.deps.NewID()
	if fu := s.capture.FollowUp; fu != nil {
		f.InboxItemID, f.FollowUpRound, f.ClaimToken = fu.Item.ID, fu.Round, fu.ClaimToken
	}
	filed := &brainwire.FileCaptureResult{Bucket: a.Bucket, Confidence: conf, ItemID: filingID(f), Status: status, Question: a.Question}
	f, filed = s.underKey(f, filed)
	item, err := s.deps.Store.File(ctx, f)
	if err != nil {
		if adopted := s.adopt(ctx, f, err); adopted != nil {
			return adopted, nil
		}
		te := &toolError{Code: "store_failed", Message: "the capture could not be filed: " + brainwire.ErrorMessage(err), err: err}
		if errors.Is(err, brainwire.ErrKeyTakenOver) {
			// A repeat of the request runs the capture now: this run
			// must not file it, nor tell its phone anything but that.
			te.fatal = keyTakenOver(err)
		}
		// A follow-up's item refuses the filing when a person changed or
		// deleted it meanwhile: their edit won, nothing went wrong.
		if code := brainwire.ErrorCode(err); s.capture.FollowUp != nil && !errors.Is(err, brainwire.ErrKeyTakenOver) &&
			(code == brainwire.EConflict || code == brainwire.ENotFound) {
			te.superseded = code
		}
		return nil, te
	}
	s.filed(item.ID, f)
	filed.ItemID = item.ID
	return filed, nil
}

// keyTakenOver is what a run's client is told when a repeat of its request
// took its Idempotency-Key over.
func keyTakenOver(err error) *brainwire.Failure {
	return &brainwire.Failure{Code: brainwire.EConflict, Message: "A repeat of this request is running the capture", Err: err}
}

// filingID is the item f files.
func filingID(f brainwire.Filing) string {
	if f.InboxItemID != "" {
		return f.InboxItemID
	}
	return f.NewInboxID
}

// underKey is f made under the request's Idempotency-Key, if it has one:
// a new capture is filed as the key's item, and the filing settles the key
// with what the phone will be told of it (filed, the tool's answer). Call
// with s.mu held.
func (s *Set) underKey(f brainwire.Filing, filed *brainwire.FileCaptureResult) (brainwire.Filing, *brainwire.FileCaptureResult) {
	if s.key == nil {
		return f, filed
	}
	if f.InboxItemID == "" && s.key.ItemID != "" {
		f.NewInboxID, f.NewRecordID = s.key.ItemID, brainwire.RecordIDOf(s.key.ItemID)
		filed.ItemID = f.NewInboxID
	}
	if rp := brainwire.ReplayOf(s.capture, filed.Result(f.UpstreamThreadID)); rp != nil {
		done := s.key.Done(*rp, f.Now)
		f.Key = &done
	}
	return f, filed
}

// filed records that the capture was filed as item id by f. Call with
// s.mu held.
func (s *Set) filed(id string, f brainwire.Filing) {
	s.filedID = id
	s.settled = s.settled || f.Key != nil
}

// adopt is the filing of this capture that f, failing with err, found in
// the store under the request's key: a run that held the key before this
// one filed it and died or stalled before the key said so (f found its
// item taken), or f itself was written and only its answer lost. This run
// then tells what was filed, and files nothing. Nil when the store holds
// no such filing. Call with s.mu held.
func (s *Set) adopt(ctx context.Context, f brainwire.Filing, err error) *brainwire.FileCaptureResult {
	if f.Key == nil || f.InboxItemID != "" || errors.Is(err, brainwire.ErrKeyTakenOver) {
		return nil
	}
	item, gerr := s.deps.Store.GetInboxItem(ctx, f.UserID, f.NewInboxID)
	if gerr != nil {
		return nil
	}
	rp := item.FiledUnderKey(f.Key.Key)
	if rp == nil {
		return nil
	}
	s.filedID = item.ID
	return &brainwire.FileCaptureResult{Bucket: rp.Bucket, Confidence: rp.Confidence, ItemID: item.ID,
		Status: item.Status, Question: rp.Question}
}

// KeepUnresolved stores the capture as an unresolved inbox item, in no
// bucket, for a person to file: what the server does when the agent's run
// ended without filing it. threadID is the run's agent conversation. It
// returns the item's id, or "" and no error when there is nothing to keep:
// the capture was filed, or it is a follow-up, whose misunderstood item
// stays as it was.
func (s *Set) KeepUnresolved(ctx context.Context, threadID string) (string, error) {
	if s.capture.FollowUp == nil && s.FiledItemID() == "" {
		if f := s.words(ctx); f != nil {
			return "", f
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.filedID != "" || s.capture.FollowUp != nil {
		return "", nil
	}
	f := s.filing(brainwire.StatusUnresolved, "", 0, s.rawText(""), threadID)
	f.Title = titleFor("", f.RawText)
	f, _ = s.underKey(f, &brainwire.FileCaptureResult{ItemID: f.NewInboxID, Status: brainwire.StatusUnresolved})
	item, err := s.deps.Store.File(ctx, f)
	if err != nil {
		if adopted := s.adopt(ctx, f, err); adopted != nil {
			return adopted.ItemID, nil
		}
		if errors.Is(err, brainwire.ErrKeyTakenOver) {
			return "", keyTakenOver(err)
		}
		return "", fmt.Errorf("keeping the unresolved capture: %w", err)
	}
	s.filed(item.ID, f)
	return item.ID, nil
}

// rawText is the person's words as the capture's item keeps them: what
// they typed, else the transcript of what they said, else the agent's
// fallback. Call with s.mu held.
func (s *Set) rawText(fallback string) string {
	if raw := s.capture.RawText(); raw != "" {
		return raw
	}
	if s.transcript != "" {
		return s.transcript
	}
	return fallback
}

// filing is the capture's new item as the agent left it: status, bucket
// and confidence as of now, under the agent run that decided them.
func (s *Set) filing(status, bucket string, conf float64, raw, threadID string) brainwire.Filing {
	now := s.deps.Now().UTC()
	return brainwire.Filing{
		UserID:     s.capture.UserID,
		NewInboxID: s.deps.NewID(),
		RawText:    raw,
		Source:     s.capture.Source(),
		Status:     status,
		Classification: brainwire.Classification{
			Bucket:       bucket,
			Confidence:   conf,
			ClassifiedBy: s.deps.AgentName,
			AgentChain:   []string{s.deps.AgentName},
			ClassifiedAt: now,
		},
		UpstreamThreadID: threadID,
		AgentRun:         s.agentRun(status, bucket, conf),
		Now:              now,
	}
}

// agentRun is the run filing the capture, as the item keeps it: which
// agent version decided what, and where the run is traced.
func (s *Set) agentRun(status, bucket string, conf float64) *brainwire.AgentRun {
	c := &s.capture
	return &brainwire.AgentRun{
		RunID:            c.RunID,
		AgentVersion:     c.Agent.Version,
		InstructionsHash: c.Agent.InstructionsHash,
		Model:            c.Agent.Model,
		Outcome:          brainwire.OutcomeOfStatus(status),
		Bucket:           bucket,
		Confidence:       conf,
		TraceID:          c.Trace.TraceID,
		SpanID:           c.Trace.SpanID,
	}
}

// titleFor keeps the agent's title, or makes one from the text's first words.
func titleFor(title, text string) string {
	if t := strings.TrimSpace(title); t != "" {
		return textcut.Ellipsis(t, 120)
	}
	words := strings.Fields(text)
	if len(words) > 8 {
		words = words[:8]
	}
	return textcut.Ellipsis(strings.Join(words, " "), 80)
}

type transcribeArgs struct {
	BlobURL string `json:"blob_url"`
}

// blobAudio is a blob being read, as a brainwire.AudioBlob: the
// transcriber streams it and opens it again when it must send it again.
type blobAudio struct {
	io.ReadCloser
	size   int64
	reopen func() (io.ReadCloser, error)
}

func (b blobAudio) Size() int64                    { return b.size }
func (b blobAudio) Reopen() (io.ReadCloser, error) { return b.reopen() }

// TranscribeResult is transcribe_audio's answer to the agent.
type TranscribeResult struct {
	Text string `json:"text"`
}

func (s *Set) transcribeAudio(ctx context.Context, call brainwire.ToolCall) (any, error) {
	var a transcribeArgs
	if err := json.Unmarshal(call.Arguments, &a); err != nil || a.BlobURL == "" {
		return nil, &toolError{Code: "invalid_arguments", Message: "expected {\"blob_url\": \"...\"}"}
	}
	// The agent may only read the audio of the capture it is serving.
	if s.capture.AudioURL == "" || a.BlobURL != s.capture.AudioURL {
		return nil, &toolError{Code: "unknown_blob", Message: "blob_url is not this capture's audio"}
	}
	text, err := s.transcribe(ctx)
	if err != nil {
		return nil, err
	}
	return TranscribeResult{Text: text}, nil
}

// transcribe turns the capture's audio into the person's words, once: a
// later call returns them again. Audio the service refused is a tool
// error for the agent to handle; any other failure (the service down,
// refusing brainwire's credential, failing) is fatal to the capture, which
// must not go on without the person's words: a *toolError whose fatal is
// a brainwire.Failure.
func (s *Set) transcribe(ctx context.Context) (string, error) {
	s.mu.Lock()
	text := s.transcript
	s.mu.Unlock()
	if text != "" {
		return text, nil
	}
	if s.deps.Blobs == nil || s.deps.Transcriber == nil {
		return "", &toolError{Code: "transcription_unavailable", Message: "transcription is not configured on this server"}
	}
	url := s.capture.AudioURL
	rc, info, err := s.deps.Blobs.Open(ctx, url)
	if err != nil {
		return "", &toolError{Code: "audio_unavailable", Message: "the audio could not be read: " + brainwire.ErrorMessage(err), err: err,
			fatal: &brainwire.Failure{Code: brainwire.EUnavailable, Message: "The capture's audio could not be read", Err: err}}
	}
	defer rc.Close()
	audio := blobAudio{ReadCloser: rc, size: info.Size, reopen: func() (io.ReadCloser, error) {
		rc, _, err := s.deps.Blobs.Open(ctx, url)
		return rc, err
	}}
	text, err = s.deps.Transcriber.Transcribe(ctx, audio, info.Name, info.ContentType)
	if err != nil {
		te := &toolError{Code: "transcription_failed", Message: brainwire.ErrorMessage(err), err: err}
		switch code := brainwire.ErrorCode(err); {
		case code == brainwire.EInvalid:
			te.Code = "invalid_audio"
		case ctx.Err() == nil:
			te.fatal = transcriptionFailure(code, err)
		}
		return "", te
	}
	s.mu.Lock()
	s.transcript = text
	s.mu.Unlock()
	return text, nil
}

// transcriptionFailure is what a capture's client is told when its audio
// could not be transcribed, by the transcription error's code.
func transcriptionFailure(code string, err error) *brainwire.Failure {
	f := &brainwire.Failure{Code: brainwire.EUpstream, Err: err}
	var e *brainwire.Error
	switch code {
	case brainwire.EBusy:
		f.Code, f.Message = code, "The transcription service is busy; try again later"
		if errors.As(err, &e) {
			f.RetryAfter = e.RetryAfter
		}
	case brainwire.EUpstreamAuth:
		f.Code, f.Message = code, "brainwire could not sign in to the transcription service"
	case brainwire.EUnavailable, brainwire.EInternal:
		f.Code, f.Message = brainwire.EUnavailable, "The transcription service could not be reached"
	default:
		// The transcription client words its failures for people ("the
		// transcription service failed: …", "… did not answer in time").
		msg := textcut.Ellipsis(brainwire.ErrorMessage(err), 240)
		f.Message = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return f
}

// words makes sure a voice capture's words are known before it is filed:
// an agent that files (or leaves unfiled) a voice capture without having
// transcribed it would otherwise leave an item without the person's
// words. It fails only when the capture cannot go on (the transcription
// service failing); audio the service refused is filed with the agent's
// words, as it would have been.
func (s *Set) words(ctx context.Context) *brainwire.Failure {
	if s.capture.Kind != brainwire.KindVoice || s.capture.AudioURL == "" {
		return nil
	}
	_, err := s.transcribe(ctx)
	var te *toolError
	if errors.As(err, &te) {
		return te.fatal
	}
	return nil
}
