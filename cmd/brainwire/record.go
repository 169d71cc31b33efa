package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/simulator"
)

const recordAbout = `
Runs one capture through the real server path against the configured agent
service (the built-in simulator when no agent service is configured, or with
-sim), records it into DIR/NAME.json, replays the fixture to check it
reproduces what the phone got, and writes its golden files (NAME.sse.golden,
NAME.telemetry.golden, and the other protocols' NAME.agui.golden and
NAME.v1.golden). Secrets from the environment, and those listed in
BRAINWIRE_RECORD_SECRETS, are never written.`

// recordFlags are the flags of `brainwire record`.
type recordFlags struct {
	text, audio, transcript, followUp string
	round                             int
	name, description, dir            string
	sim, force                        bool
	simulator                         simFlags
	apiSet                            bool // -api was given
	chaining                          string
	cut, httpError                    string
	splitUTF8                         int
	retryAfterMs, retries             int
}

func record(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f recordFlags
	cmd := newCommand("record", "record [flags]", recordAbout, envAgent)
	cmd.StringVar(&f.text, "text", "", "the capture's text")
	cmd.StringVar(&f.audio, "audio", "", "a voice capture: the audio `file` to upload")
	cmd.StringVar(&f.transcript, "transcript", "", "a voice capture transcribed as this text by an offline stand-in instead of the transcription service; without -audio, one second of silence is uploaded")
	cmd.StringVar(&f.followUp, "follow-up", "", "answer the -text capture's clarifying question with this text and record the follow-up (the -text capture must come back MISUNDERSTOOD)")
	cmd.IntVar(&f.round, "round", 1, "with -follow-up: the follow_up_round")
	cmd.StringVar(&f.name, "name", "", "fixture name (default: made from the text)")
	cmd.StringVar(&f.description, "description", "", "what the fixture tests")
	cmd.StringVar(&f.dir, "dir", "fixtures", "fixtures directory")
	cmd.BoolVar(&f.sim, "sim", false, "record against the built-in simulator even when an agent service is configured")
	cmd.StringVar(&f.simulator.face, "api", simResponses, "the simulator's face: responses (an agent brainwire defines), agent (a Foundry agent by name), threads (the classic threads/runs API) or adk (an ADK API server)")
	f.simulator.register(cmd.FlagSet, "sim-", simulator.DefaultChunkDelay)
	cmd.StringVar(&f.chaining, "chaining", "", "Responses API: how responses continue the conversation, conversation or previous_response_id (default BRAINWIRE_RESPONSES_CHAINING, or as the endpoint has it)")
	cmd.StringVar(&f.cut, "cut", "", "fault: `N:E` cuts the N-th streamed response in the middle of its E-th event (a connection reset)")
	cmd.StringVar(&f.httpError, "http-error", "", "fault: `N:STATUS` answers the N-th request with STATUS and the service's error body, without sending it")
	cmd.IntVar(&f.retryAfterMs, "retry-after-ms", 0, "with -http-error: the answer asks for a wait of `MS` milliseconds (retry-after-ms) instead of Retry-After: 20")
	cmd.IntVar(&f.retries, "retries", -1, "`N` times a refused call is sent again (-1: as BRAINWIRE_UPSTREAM_RETRIES says); the fixture says it, replay does the same")
	cmd.IntVar(&f.splitUTF8, "split-utf8", 0, "make replay split its writes inside the first `N` multibyte UTF-8 characters of the first streamed response")
	cmd.BoolVar(&f.force, "force", false, "overwrite an existing fixture")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	cmd.Visit(func(fl *flag.Flag) { f.apiSet = f.apiSet || fl.Name == "api" })
	// A capture's INFO lines would bury the SSE it prints.
	log, err := newLogger(getenv, stderr, slog.LevelWarn)
	if err != nil {
		return err
	}
	setup, req, err := f.requests()
	if err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = slug(f.text + " " + f.followUp + " " + f.transcript)
	}
	path := filepath.Join(f.dir, recorder.FileName(name))
	if _, err := os.Stat(path); err == nil && !f.force {
		return fmt.Errorf("%s exists (use -force to record it again)", path)
	}

	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	rc, stop, err := f.recordConfig(ctx, cfg, getenv, name, log)
	if err != nil {
		return err
	}
	defer stop()
	got, err := replay.Record(ctx, rc, setup, req)
	if err != nil {
		return err
	}
	fx := got.Fixture
	fx.Name, fx.Description = name, f.description
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("fixtures directory: %w", err)
	}
	if err := recorder.WriteFile(path, fx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recorded %s: %s\n", path, describe(fx))

	// The golden files are what replay makes of the file just written;
	// they must also be what the phone got while it was recorded.
	written, err := recorder.Load(path)
	if err != nil {
		return err
	}
	goldens, err := replay.Goldens(ctx, written, path, replay.Options{})
	if err != nil {
		return fmt.Errorf("the new fixture does not replay: %w", err)
	}
	sse := goldens[0].Data
	if !bytes.Equal(sse, got.Response.Body) {
		return fmt.Errorf("the new fixture replays to different bytes than the phone got:\n%s",
			replay.Diff(string(got.Response.Body), string(sse), "recorded live", "replayed"))
	}
	for _, g := range goldens {
		if err := recorder.WriteFileAtomic(g.Path, g.Data); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "golden   %s\n", g.Path)
	}
	fmt.Fprintln(stdout)
	_, err = stdout.Write(sse)
	return err
}

// requests returns the phone's requests the flags describe.
func (f *recordFlags) requests() (setup *replay.Request, req replay.Request, err error) {
	switch {
	case (f.audio != "" || f.transcript != "") && (f.text != "" || f.followUp != ""):
		return nil, req, usageError{"record: -audio and -transcript go without -text and -follow-up"}
	case f.audio == "" && f.transcript != "":
		return nil, replay.Request{Kind: brainwire.KindVoice, Audio: replay.SilentWAV(16000), AudioName: "capture.wav", AudioType: "audio/wav"}, nil
	case f.audio != "":
		b, err := os.ReadFile(f.audio)
		if err != nil {
			return nil, req, fmt.Errorf("reading the audio: %w", err)
		}
		return nil, replay.Request{Kind: brainwire.KindVoice, Audio: b, AudioName: filepath.Base(f.audio),
			AudioType: mime.TypeByExtension(filepath.Ext(f.audio))}, nil
	case strings.TrimSpace(f.text) == "":
		return nil, req, usageError{"record: -text, -audio or -transcript is required"}
	case f.followUp != "":
		return &replay.Request{Kind: brainwire.KindText, Text: f.text},
			replay.Request{Kind: brainwire.KindFollowUp, Text: f.followUp, FollowUpRound: f.round}, nil
	}
	return nil, replay.Request{Kind: brainwire.KindText, Text: f.text}, nil
}

// recordConfig sets up the upstream: the configured agent service, or an
// in-process simulator with ids and clock seeded from the fixture name so
// that recording a fixture again gives the same ids. stop stops the
// simulator.
func (f *recordFlags) recordConfig(ctx context.Context, cfg config, getenv func(string) string, name string, log *slog.Logger) (rc replay.RecordConfig, stop func(), err error) {
	a := cfg.Agent
	if f.apiSet && a.Sim == "" && !f.sim {
		return rc, nil, usageError{"record: -api picks the simulator's face: use it with the simulator (-sim)"}
	}
	if f.sim || a.Sim != "" {
		if err := a.useSimulator(f.simulator.face); err != nil {
			return rc, nil, usageError{"record: -api: " + err.Error()}
		}
	}
	if f.chaining != "" {
		a.Responses.Chaining = responses.Chaining(f.chaining)
	}
	rc = replay.RecordConfig{
		Secrets:    secretsFromEnv(getenv),
		Upstream:   a.upstream(),
		Retries:    cfg.Retries,
		Logger:     log,
		RunTimeout: cfg.Server.RunTimeout,
	}
	if f.retries >= 0 {
		rc.Retries = f.retries
	}
	if rc.Faults, err = f.faults(); err != nil {
		return rc, nil, err
	}
	stop = func() {}
	if a.Sim != "" {
		sc, err := f.simulatorConfig(name)
		if err != nil {
			return rc, nil, err
		}
		var endpoint string
		if endpoint, stop, err = startSimulator(ctx, sc); err != nil {
			return rc, nil, err
		}
		a.simulatorAt(endpoint)
	}
	cred := newCredential()
	if rc.Agent, err = a.opener(cred); err == nil {
		rc.Transcriber, err = f.transcriber(getenv, cred, log)
	}
	if err != nil {
		stop()
		return rc, nil, err
	}
	return rc, stop, nil
}

// simulatorConfig is the recording simulator's: paced as the flags say,
// with ids drawn from the fixture name and a clock starting at replay's.
func (f *recordFlags) simulatorConfig(name string) (simulator.Config, error) {
	c, err := f.simulator.config()
	if err != nil {
		return c, err
	}
	start := time.Now()
	c.NewID = seededIDs(name)
	c.Now = func() time.Time { return replay.Clock().Add(time.Since(start)) }
	return c, nil
}

// faults reads -cut, -http-error and -split-utf8.
func (f *recordFlags) faults() (replay.Faults, error) {
	var fl replay.Faults
	if f.cut != "" {
		n, e, err := parsePair("cut", f.cut)
		if err != nil {
			return fl, err
		}
		fl.CutStream, fl.CutEvent = n, e
	}
	if f.httpError != "" {
		n, status, err := parsePair("http-error", f.httpError)
		if err != nil || status < 400 || status > 599 {
			return fl, usageError{fmt.Sprintf("record: -http-error %q: want N:STATUS with a 4xx or 5xx status", f.httpError)}
		}
		fl.FailRequest, fl.FailStatus, fl.RetryAfterMs = n, status, f.retryAfterMs
	}
	fl.SplitUTF8 = f.splitUTF8
	return fl, nil
}

// transcriber is the offline stand-in for -transcript, the configured
// service for -audio, and none otherwise.
func (f *recordFlags) transcriber(getenv func(string) string, cred credential, log *slog.Logger) (brainwire.Transcriber, error) {
	switch {
	case f.transcript != "":
		return replay.StaticTranscriber{Text: f.transcript}, nil
	case f.audio != "":
		return openTranscriber(getenv, cred, nil, log)
	}
	return nil, nil
}

// secretsFromEnv lists the configured credentials, to be redacted from
// recordings wherever they appear.
func secretsFromEnv(getenv func(string) string) []string {
	var out []string
	if _, v, err := adk.ParseHeader(getenv("ADK_AUTH_HEADER")); err == nil {
		out = append(out, v)
		if _, token, ok := strings.Cut(v, " "); ok {
			out = append(out, token) // the credential of "Bearer <token>"
		}
	}
	for _, name := range []string{"AZURE_AI_PROJECT_TOKEN", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "COSMOS_KEY",
		"AZURE_STORAGE_CONNECTION_STRING", "APPLICATIONINSIGHTS_CONNECTION_STRING"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		out = append(out, v)
		// Connection strings: each key and signature on its own too.
		for part := range strings.SplitSeq(v, ";") {
			if k, val, ok := strings.Cut(part, "="); ok && val != "" {
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "accountkey", "sharedaccesssignature", "instrumentationkey", "accesskey":
					out = append(out, val)
				}
			}
		}
	}
	for key := range strings.SplitSeq(getenv("BRAINWIRE_API_KEYS"), ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(key), ":"); k != "" {
			out = append(out, k)
		}
	}
	for s := range strings.SplitSeq(getenv("BRAINWIRE_RECORD_SECRETS"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// seededIDs returns simulator ids (thread_…, run_…: 24 letters and digits
// like the service's) drawn from a generator seeded by name.
func seededIDs(name string) func(prefix string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var mu sync.Mutex
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	return func(prefix string) string {
		mu.Lock()
		defer mu.Unlock()
		b := make([]byte, 24)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return prefix + "_" + string(b)
	}
}

// slug makes a fixture name from text.
func slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 48 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "capture"
	}
	return s
}

func describe(fx *recorder.Fixture) string {
	events := 0
	for _, ex := range fx.Exchanges {
		if ex.Response != nil {
			events += len(ex.Response.Events)
		}
	}
	outcome := fx.Result.Outcome
	if outcome == "" {
		outcome = "no outcome"
	}
	return fmt.Sprintf("%s, %s, %s, %s, %s", counted(len(fx.Exchanges), "exchange"), counted(events, "event"),
		counted(len(fx.Tools), "tool call"), counted(fx.Result.ReasoningChunks, "reasoning chunk"), outcome)
}

// parsePair reads a flag value N:M of two numbers from 1.
func parsePair(flag, s string) (n, m int, err error) {
	a, b, ok := strings.Cut(s, ":")
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || m < 1 {
		return 0, 0, usageError{fmt.Sprintf("record: -%s %q: want N:M, both numbers from 1", flag, s)}
	}
	return n, m, nil
}

// recording is live recording for `serve`: a recorder, nil when
// BRAINWIRE_RECORD_DIR is unset.
type recording struct {
	recorder *recorder.Recorder
	log      *slog.Logger
}

// close writes out what is still queued.
func (r *recording) close() {
	if r.recorder == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.recorder.Close(ctx); err != nil {
		r.log.Error("recorder", "error", err)
	}
}

// setupRecording reads BRAINWIRE_RECORD_DIR (where fixtures go: a
// directory, or a Blob Storage container URL so that every replica's
// recordings land in one place) and BRAINWIRE_RECORD_SAMPLE (the share of
// captures recorded, 0..1, default 1). Secrets from the environment are
// redacted from every recording.
func setupRecording(ctx context.Context, cfg config, getenv func(string) string, log *slog.Logger) (*recording, error) {
	dir := getenv("BRAINWIRE_RECORD_DIR")
	if dir == "" {
		return &recording{log: log}, nil
	}
	sample, err := envParse(getenv, "BRAINWIRE_RECORD_SAMPLE", 1.0, "a number from 0 to 1", func(v string) (float64, bool) {
		s, err := strconv.ParseFloat(v, 64)
		return s, err == nil && s >= 0 && s <= 1
	})
	if err != nil {
		return nil, err
	}
	sink, err := recordingSink(ctx, dir, getenv)
	if err != nil {
		return nil, fmt.Errorf("BRAINWIRE_RECORD_DIR: %w", err)
	}
	rec, err := recorder.New(recorder.Config{
		Sink:     sink,
		Sample:   sample,
		Secrets:  secretsFromEnv(getenv),
		Upstream: cfg.Agent.upstream(),
		Retries:  cfg.Retries,
		Logger:   log.With("component", "recorder"),
	})
	if err != nil {
		return nil, err
	}
	log.Info("recording captures", "to", dir, "sample", sample)
	return &recording{recorder: rec, log: log}, nil
}
