package transcription_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/testaudio"
	"github.com/brainwire/brainwire/transcription"
)

// request is what the fake service parsed out of one call: of the file
// part, its digest and size, so that a large one is not held in memory.
type request struct {
	Path, APIVersion       string
	APIKey, Authorization  string
	Fields                 map[string]string
	File                   [32]byte
	FileSize               int64
	Filename, FileType     string
	ContentLengthWasStated bool
}

// service is a fake transcription endpoint. It parses every request the way
// the real service must (multipart/form-data, one file part) and answers
// with reply.
type service struct {
	t     *testing.T
	srv   *httptest.Server
	reply func(w http.ResponseWriter, r *http.Request, got request)
	// halfway, when set, runs once half the request has arrived, the
	// rest of the file part still on its way.
	halfway func()

	mu       sync.Mutex
	requests []request
}

func newService(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, got request)) *service {
	t.Helper()
	s := &service{t: t, reply: reply}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// answerText replies as the service does for response_format=json.
func answerText(text string) func(http.ResponseWriter, *http.Request, request) {
	return func(w http.ResponseWriter, _ *http.Request, _ request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
	}
}

func (s *service) handle(w http.ResponseWriter, r *http.Request) {
	got := request{
		Path:                   r.URL.Path,
		APIVersion:             r.URL.Query().Get("api-version"),
		APIKey:                 r.Header.Get("api-key"),
		Authorization:          r.Header.Get("Authorization"),
		Fields:                 map[string]string{},
		ContentLengthWasStated: r.ContentLength > 0,
	}
	if r.Method != http.MethodPost {
		s.t.Errorf("method = %s, want POST", r.Method)
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		s.t.Errorf("Content-Type = %q, want multipart/form-data", r.Header.Get("Content-Type"))
		http.Error(w, "bad content type", http.StatusBadRequest)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		s.t.Errorf("reading multipart body: %v", err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	files := 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.t.Errorf("reading multipart body: %v", err)
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if part.FormName() == "file" {
			files++
			h := sha256.New()
			n, err := io.CopyN(h, part, r.ContentLength/2)
			if err == nil && s.halfway != nil {
				s.halfway()
			}
			m, err2 := io.Copy(h, part)
			if err2 != nil || (err != nil && err != io.EOF) {
				s.t.Errorf("reading the file part: %v, %v", err, err2)
				return
			}
			h.Sum(got.File[:0])
			got.FileSize, got.Filename, got.FileType = n+m, part.FileName(), part.Header.Get("Content-Type")
			continue
		}
		b, err := io.ReadAll(part)
		if err != nil {
			s.t.Errorf("reading part %q: %v", part.FormName(), err)
			return
		}
		if part.FileName() != "" {
			s.t.Errorf("field %q sent as a file", part.FormName())
		}
		if _, dup := got.Fields[part.FormName()]; dup {
			s.t.Errorf("field %q sent twice", part.FormName())
		}
		got.Fields[part.FormName()] = string(b)
	}
	if files != 1 {
		s.t.Errorf("%d file parts, want 1", files)
	}
	s.mu.Lock()
	s.requests = append(s.requests, got)
	s.mu.Unlock()
	s.reply(w, r, got)
}

func (s *service) calls() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.requests...)
}

func (s *service) client(t *testing.T, mutate func(*transcription.Config)) *transcription.Client {
	t.Helper()
	cfg := transcription.Config{Endpoint: s.srv.URL, Deployment: "whisper", APIKey: "test-key"}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := transcription.New(cfg, s.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTranscribeSpeech(t *testing.T) {
	wav := testaudio.WAV(t, "Remind me to call Sarah about the garden on Friday.")
	svc := newService(t, answerText(" Remind me to call Sarah about the garden on Friday. "))
	c := svc.client(t, func(cfg *transcription.Config) {
		cfg.Language = "en"
		cfg.Prompt = "Names: Sarah."
	})

	text, err := c.Transcribe(t.Context(), bytes.NewReader(wav), "capture-1.wav", "audio/wav")
	if err != nil {
		t.Fatalf("Transcribe: %v", err)
	}
	if text != "Remind me to call Sarah about the garden on Friday." {
		t.Errorf("text = %q", text)
	}

	calls := svc.calls()
	if len(calls) != 1 {
		t.Fatalf("%d requests, want 1", len(calls))
	}
	got := calls[0]
	if got.Path != "/openai/deployments/whisper/audio/transcriptions" {
		t.Errorf("path = %q", got.Path)
	}
	if got.APIVersion != transcription.DefaultAPIVersion {
		t.Errorf("api-version = %q, want %q", got.APIVersion, transcription.DefaultAPIVersion)
	}
	if got.APIKey != "test-key" || got.Authorization != "" {
		t.Errorf("api-key = %q, Authorization = %q; want the key only", got.APIKey, got.Authorization)
	}
	if got.File != sha256.Sum256(wav) {
		t.Errorf("file part holds %d bytes differing from the %d-byte recording", got.FileSize, len(wav))
	}
	if got.Filename != "capture-1.wav" || got.FileType != "audio/wav" {
		t.Errorf("file part = %q (%s), want capture-1.wav (audio/wav)", got.Filename, got.FileType)
	}
	wantFields := map[string]string{"response_format": "json", "language": "en", "prompt": "Names: Sarah."}
	if len(got.Fields) != len(wantFields) {
		t.Errorf("fields = %q, want %q", got.Fields, wantFields)
	}
	for k, v := range wantFields {
		if got.Fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, got.Fields[k], v)
		}
	}
	if !got.ContentLengthWasStated {
		t.Error("the body was sent without a Content-Length")
	}
}

// fakeCredential hands out a fixed token, or fails, and records the scopes.
type fakeCredential struct {
	err    error
	mu     sync.Mutex
	scopes []string
}

func (c *fakeCredential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, opts.Scopes...)
	if c.err != nil {
		return azcore.AccessToken{}, c.err
	}
	return azcore.AccessToken{Token: "entra-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestBearerToken(t *testing.T) {
	svc := newService(t, answerText("hello"))
	cred := &fakeCredential{}
	c := svc.client(t, func(cfg *transcription.Config) {
		cfg.Endpoint += "/" // as copied from the portal
		cfg.APIKey = ""
		cfg.TokenCredential = cred
		cfg.APIVersion = "2025-04-01-preview"
		cfg.Deployment = "gpt-4o-transcribe"
	})
	if _, err := c.Transcribe(t.Context(), strings.NewReader("OggS..."), "a.ogg", "audio/ogg"); err != nil {
		t.Fatal(err)
	}
	got := svc.calls()[0]
	if got.Authorization != "Bearer entra-token" || got.APIKey != "" {
		t.Errorf("Authorization = %q, api-key = %q; want the bearer token only", got.Authorization, got.APIKey)
	}
	if got.Path != "/openai/deployments/gpt-4o-transcribe/audio/transcriptions" || got.APIVersion != "2025-04-01-preview" {
		t.Errorf("path = %q, api-version = %q", got.Path, got.APIVersion)
	}
	if len(got.Fields) != 1 || got.Fields["response_format"] != "json" {
		t.Errorf("fields = %q, want only response_format", got.Fields)
	}
	if len(cred.scopes) != 1 || cred.scopes[0] != transcription.TokenScope {
		t.Errorf("token scopes = %q, want %q", cred.scopes, transcription.TokenScope)
	}
}

func TestTokenFailure(t *testing.T) {
	svc := newService(t, answerText("never"))
	c := svc.client(t, func(cfg *transcription.Config) {
		cfg.APIKey = ""
		cfg.TokenCredential = &fakeCredential{err: errors.New("no managed identity")}
	})
	_, err := c.Transcribe(t.Context(), strings.NewReader("x"), "a.wav", "audio/wav")
	if brainwire.ErrorCode(err) != brainwire.EUpstreamAuth || !strings.Contains(err.Error(), "no managed identity") {
		t.Errorf("err = %v, want code %s wrapping the credential's error", err, brainwire.EUpstreamAuth)
	}
	if n := len(svc.calls()); n != 0 {
		t.Errorf("%d requests sent without a token", n)
	}
}

// TestFormats checks that the audio goes out under the name and type
// brainwire.AudioFormat gives it, and that audio in a format the service
// does not take is never sent.
func TestFormats(t *testing.T) {
	svc := newService(t, answerText("ok"))
	c := svc.client(t, nil)
	for _, tc := range []struct {
		filename, contentType string
		sentName, sentType    string // empty: rejected before sending
	}{
		{"memo.m4a", "audio/x-m4a", "memo.m4a", "audio/x-m4a"},
		{"recording", "audio/webm;codecs=opus", "recording.webm", "audio/webm;codecs=opus"},
		{"dir/sub/clip.ogg", "application/octet-stream", "clip.ogg", "audio/ogg"},
		{"notes.txt", "text/plain", "", ""},
		{"clip.wav", "audio/", "", ""},
	} {
		before := len(svc.calls())
		_, err := c.Transcribe(t.Context(), strings.NewReader("audio bytes"), tc.filename, tc.contentType)
		calls := svc.calls()
		if tc.sentName == "" {
			if brainwire.ErrorCode(err) != brainwire.EInvalid {
				t.Errorf("(%q, %q): err = %v, want code %s", tc.filename, tc.contentType, err, brainwire.EInvalid)
			}
			if len(calls) != before {
				t.Errorf("(%q, %q): sent although rejected", tc.filename, tc.contentType)
			}
			continue
		}
		if err != nil {
			t.Errorf("(%q, %q): %v", tc.filename, tc.contentType, err)
			continue
		}
		got := calls[len(calls)-1]
		if got.Filename != tc.sentName || got.FileType != tc.sentType {
			t.Errorf("(%q, %q): sent %q (%s), want %q (%s)", tc.filename, tc.contentType,
				got.Filename, got.FileType, tc.sentName, tc.sentType)
		}
	}
}

func TestSizeLimits(t *testing.T) {
	svc := newService(t, answerText("ok"))
	c := svc.client(t, nil)

	for name, size := range map[string]int{"empty": 0, "over the limit": brainwire.MaxAudioBytes + 1} {
		_, err := c.Transcribe(t.Context(), bytes.NewReader(make([]byte, size)), "a.wav", "audio/wav")
		if brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("%s: err = %v, want code %s", name, err, brainwire.EInvalid)
		}
	}
	if n := len(svc.calls()); n != 0 {
		t.Fatalf("%d requests sent for rejected audio", n)
	}

	// Exactly at the limit is sent, whole, from a reader that hides its size.
	if _, err := c.Transcribe(t.Context(), io.LimitReader(zeros{}, brainwire.MaxAudioBytes), "a.wav", "audio/wav"); err != nil {
		t.Fatalf("audio at the limit: %v", err)
	}
	if got := svc.calls(); len(got) != 1 || got[0].FileSize != brainwire.MaxAudioBytes {
		t.Errorf("audio at the limit arrived with %d bytes", got[0].FileSize)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestAudioReadError(t *testing.T) {
	svc := newService(t, answerText("never"))
	c := svc.client(t, nil)
	broken := io.MultiReader(strings.NewReader("RIFF"), errReader{errors.New("blob download broke")})
	_, err := c.Transcribe(t.Context(), broken, "a.wav", "audio/wav")
	if err == nil || !strings.Contains(err.Error(), "blob download broke") {
		t.Errorf("err = %v, want the reader's error", err)
	}
	if n := len(svc.calls()); n != 0 {
		t.Errorf("%d requests sent with half the audio", n)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestServiceErrors(t *testing.T) {
	future := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		wantCode    string // brainwire code
		wantAPICode string
		wantMessage string // in the error, for the log
		// wantSaid is in the message people read; wantMessage when empty.
		wantSaid  string
		wantRetry [2]time.Duration // inclusive range
	}{
		{
			name:        "invalid file (OpenAI shape)",
			status:      400,
			body:        `{"error":{"message":"Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']","type":"invalid_request_error","param":null,"code":null}}`,
			wantCode:    brainwire.EInvalid,
			wantMessage: "Invalid file format.",
		},
		{
			name:        "undecodable file",
			status:      400,
			body:        `{"error":{"code":"invalid_value","message":"The audio file could not be decoded or its format is not supported.","param":"file","type":"invalid_request_error"}}`,
			wantCode:    brainwire.EInvalid,
			wantAPICode: "invalid_value",
			wantMessage: "could not be decoded",
		},
		{
			name:        "model cannot read the file",
			status:      424,
			body:        `{"error":{"code":"model_error","message":"Unrecognized file format. Supported formats: ['flac', 'm4a']"}}`,
			wantCode:    brainwire.EInvalid,
			wantAPICode: "model_error",
			wantMessage: "Unrecognized file format",
		},
		{
			name:        "deployment is not a transcription model",
			status:      400,
			body:        `{"error":{"code":"OperationNotSupported","message":"The audioTranscription operation does not work with the specified model, gpt-4o."}}`,
			wantCode:    brainwire.EUpstream,
			wantAPICode: "OperationNotSupported",
			wantMessage: "does not work with the specified model",
		},
		{
			name:        "wrong key",
			status:      401,
			body:        `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint."}}`,
			wantCode:    brainwire.EUpstreamAuth,
			wantAPICode: "401",
			wantMessage: "Access denied",
			wantSaid:    "brainwire could not sign in to the transcription service",
		},
		{
			name:        "bad token (gateway shape)",
			status:      401,
			body:        `{"statusCode":401,"message":"Unauthorized. Access token is missing, invalid, audience is incorrect, or have expired."}`,
			wantCode:    brainwire.EUpstreamAuth,
			wantMessage: "Access token is missing",
			wantSaid:    "brainwire could not sign in to the transcription service",
		},
		{
			name:        "no such deployment",
			status:      404,
			body:        `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			wantCode:    brainwire.EUpstream,
			wantAPICode: "DeploymentNotFound",
			wantMessage: "does not exist",
		},
		{
			name:        "throttled (milliseconds)",
			status:      429,
			header:      map[string]string{"Retry-After": "2", "retry-after-ms": "1500"},
			body:        `{"error":{"code":"429","message":"Rate limit."}}`,
			wantCode:    brainwire.EBusy,
			wantSaid:    "the transcription service is busy",
			wantAPICode: "429",
			wantMessage: "Rate limit.",
			wantRetry:   [2]time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond},
		},
		{
			name:        "unavailable until a date",
			status:      503,
			header:      map[string]string{"Retry-After": future, "Content-Type": "text/html"},
			body:        "<html>\n<body>Service   Unavailable</body></html>",
			wantCode:    brainwire.EUpstream,
			wantMessage: "<html> <body>Service Unavailable</body></html>",
			wantSaid:    "the transcription service failed: it answered 503 Service Unavailable",
			wantRetry:   [2]time.Duration{20 * time.Second, 30 * time.Second},
		},
		{
			name:        "server error (plain text)",
			status:      500,
			body:        "upstream connect error or disconnect/reset before headers",
			wantCode:    brainwire.EUpstream,
			wantMessage: "upstream connect error",
			wantSaid:    "the transcription service failed: it answered 500 Internal Server Error",
		},
		{
			name:        "bad gateway, no body",
			status:      502,
			wantCode:    brainwire.EUpstream,
			wantMessage: "Bad Gateway",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, func(w http.ResponseWriter, _ *http.Request, _ request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("apim-request-id", "req-123")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			_, err := svc.client(t, nil).Transcribe(t.Context(), strings.NewReader("audio"), "a.wav", "audio/wav")
			if got := brainwire.ErrorCode(err); got != tc.wantCode {
				t.Errorf("code = %q, want %q (err %v)", got, tc.wantCode, err)
			}
			var apiErr *transcription.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an *APIError", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Code != tc.wantAPICode || apiErr.RequestID != "req-123" {
				t.Errorf("APIError = %+v", apiErr)
			}
			if !strings.Contains(apiErr.Message, tc.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", apiErr.Message, tc.wantMessage)
			}
			// People read the service's own words, never a proxy's page:
			// that stays in the error, for the log.
			said := tc.wantSaid
			if said == "" {
				said = tc.wantMessage
			}
			if !strings.Contains(brainwire.ErrorMessage(err), said) {
				t.Errorf("ErrorMessage = %q, want it to contain %q", brainwire.ErrorMessage(err), said)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantMessage)
			}
			if r := apiErr.RetryAfter; r < tc.wantRetry[0] || r > tc.wantRetry[1] {
				t.Errorf("RetryAfter = %v, want %v..%v", r, tc.wantRetry[0], tc.wantRetry[1])
			}
			if apiErr.AudioRejected() != (tc.wantCode == brainwire.EInvalid) {
				t.Errorf("AudioRejected() = %v", apiErr.AudioRejected())
			}
		})
	}
}

func TestLongErrorMessageIsCut(t *testing.T) {
	svc := newService(t, func(w http.ResponseWriter, _ *http.Request, _ request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, strings.Repeat("é", 1000))
	})
	_, err := svc.client(t, nil).Transcribe(t.Context(), strings.NewReader("a"), "a.wav", "audio/wav")
	var apiErr *transcription.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	if len(apiErr.Message) > 310 || !strings.HasSuffix(apiErr.Message, "é…") {
		t.Errorf("message of %d bytes: %q", len(apiErr.Message), apiErr.Message)
	}
}

func TestMalformedAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		contentType, body string
	}{
		"not JSON":        {"text/plain", "Remind me to call Sarah."},
		"truncated JSON":  {"application/json", `{"text":"Remind me`},
		"no text":         {"application/json", `{"transcript":"Remind me"}`},
		"text not string": {"application/json", `{"text":42}`},
		"empty body":      {"application/json", ""},
	} {
		t.Run(name, func(t *testing.T) {
			svc := newService(t, func(w http.ResponseWriter, _ *http.Request, _ request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.body)
			})
			_, err := svc.client(t, nil).Transcribe(t.Context(), strings.NewReader("a"), "a.wav", "audio/wav")
			if brainwire.ErrorCode(err) != brainwire.EUpstream {
				t.Errorf("err = %v, want code %s", err, brainwire.EUpstream)
			}
		})
	}
}

func TestSilence(t *testing.T) {
	svc := newService(t, answerText(""))
	text, err := svc.client(t, nil).Transcribe(t.Context(), strings.NewReader("a"), "a.wav", "audio/wav")
	if err != nil || text != "" {
		t.Errorf("Transcribe = %q, %v; want empty text and no error", text, err)
	}
}

func TestHangingServiceTimesOut(t *testing.T) {
	release := make(chan struct{})
	svc := newService(t, func(_ http.ResponseWriter, r *http.Request, _ request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := svc.client(t, nil).Transcribe(ctx, strings.NewReader("a"), "a.wav", "audio/wav")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if brainwire.ErrorCode(err) != brainwire.EUpstream || !strings.Contains(brainwire.ErrorMessage(err), "in time") {
		t.Errorf("code = %q, message = %q; want %q saying it timed out", brainwire.ErrorCode(err), brainwire.ErrorMessage(err), brainwire.EUpstream)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v", d)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c, err := transcription.New(transcription.Config{Endpoint: srv.URL, Deployment: "whisper", APIKey: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Transcribe(t.Context(), strings.NewReader("a"), "a.wav", "audio/wav")
	if brainwire.ErrorCode(err) != brainwire.EUnavailable {
		t.Errorf("err = %v, want code %s", err, brainwire.EUnavailable)
	}
}

// TestRedirectResendsBody checks that the body can be sent again, as the
// HTTP client does on redirects and retried HTTP/2 streams.
func TestRedirectResendsBody(t *testing.T) {
	var svc *service
	svc = newService(t, func(w http.ResponseWriter, r *http.Request, _ request) {
		if r.URL.Query().Get("moved") == "" {
			http.Redirect(w, r, r.URL.Path+"?moved=1&"+r.URL.RawQuery, http.StatusTemporaryRedirect)
			return
		}
		answerText("after redirect")(w, r, request{})
	})
	text, err := svc.client(t, nil).Transcribe(t.Context(), strings.NewReader("audio!"), "a.wav", "audio/wav")
	if err != nil || text != "after redirect" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	calls := svc.calls()
	if want := sha256.Sum256([]byte("audio!")); len(calls) != 2 || calls[0].File != want || calls[1].File != want {
		t.Errorf("requests = %+v, want the same file twice", calls)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ok := transcription.Config{Endpoint: "https://res.openai.azure.com", Deployment: "whisper", APIKey: "k"}
	if _, err := transcription.New(ok, nil); err != nil {
		t.Fatalf("New(valid config): %v", err)
	}
	for name, mutate := range map[string]func(*transcription.Config){
		"no endpoint":         func(c *transcription.Config) { c.Endpoint = "" },
		"relative endpoint":   func(c *transcription.Config) { c.Endpoint = "res.openai.azure.com" },
		"query in endpoint":   func(c *transcription.Config) { c.Endpoint += "?api-version=1" },
		"no deployment":       func(c *transcription.Config) { c.Deployment = "" },
		"slash in deployment": func(c *transcription.Config) { c.Deployment = "a/b" },
		"no credential":       func(c *transcription.Config) { c.APIKey = "" },
		"two credentials":     func(c *transcription.Config) { c.TokenCredential = &fakeCredential{} },
	} {
		c := ok
		mutate(&c)
		if _, err := transcription.New(c, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// watchedAudio is audio that tells when it is first read.
type watchedAudio struct {
	r    io.Reader
	read chan struct{}
	once sync.Once
}

func (w *watchedAudio) Read(p []byte) (int, error) {
	w.once.Do(func() { close(w.read) })
	return w.r.Read(p)
}

// At most MaxConcurrent transcriptions hold their audio at once: a further
// one waits for a turn without reading its audio, and gives up with its
// context.
func TestConcurrentTranscriptionsAreBounded(t *testing.T) {
	arrived, gate := make(chan struct{}, 4), make(chan struct{})
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, got request) {
		arrived <- struct{}{}
		<-gate
		answerText("done")(w, r, got)
	})
	c := svc.client(t, func(cfg *transcription.Config) { cfg.MaxConcurrent = 1 })
	first := make(chan error, 1)
	go func() {
		_, err := c.Transcribe(t.Context(), strings.NewReader("RIFF....WAVE"), "a.wav", "audio/wav")
		first <- err
	}()
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the first transcription never reached the service")
	}

	ctx, cancel := context.WithCancel(t.Context())
	second := &watchedAudio{r: strings.NewReader("RIFF....WAVE"), read: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := c.Transcribe(ctx, second, "b.wav", "audio/wav")
		done <- err
	}()
	select {
	case <-second.read:
		t.Fatal("a second transcription read its audio while the first held the only slot")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || brainwire.ErrorCode(err) != brainwire.EUpstream {
		t.Errorf("the waiting transcription ended with %v", err)
	}

	close(gate)
	if err := <-first; err != nil {
		t.Fatalf("first transcription: %v", err)
	}
	if text, err := c.Transcribe(t.Context(), strings.NewReader("RIFF....WAVE"), "c.wav", "audio/wav"); err != nil || text != "done" {
		t.Fatalf("a transcription after the slot freed: %q, %v", text, err)
	}
	if n := len(svc.calls()); n != 2 {
		t.Errorf("%d requests reached the service, want 2", n)
	}
}
