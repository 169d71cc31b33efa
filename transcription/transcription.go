// Package transcription turns speech into text with the Azure OpenAI audio
// transcription REST API (Whisper or gpt-4o-transcribe deployments):
//
//	POST {endpoint}/openai/deployments/{deployment}/audio/transcriptions?api-version=...
//
// with a multipart/form-data body. Audio the service would refuse (too
// large, an unsupported format) is rejected before anything is sent.
package transcription

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
)

// DefaultAPIVersion is the latest generally available dated version of the
// Azure OpenAI inference API.
const DefaultAPIVersion = "2024-10-21"

// TokenScope is the scope of Microsoft Entra ID tokens for Azure OpenAI.
const TokenScope = "https://cognitiveservices.azure.com/.default"

// maxAnswerSize bounds how much of an answer is read: hours of speech are
// well under it.
const maxAnswerSize = 4 << 20

// Config says which deployment to call and how.
type Config struct {
	// Endpoint is the resource's endpoint, e.g.
	// https://<resource>.openai.azure.com.
	Endpoint string
	// Deployment is the name of the transcription model's deployment.
	Deployment string
	// APIVersion is sent as api-version; empty means DefaultAPIVersion.
	APIVersion string

	// APIKey is sent in the api-key header. Without one, TokenCredential
	// supplies Microsoft Entra ID bearer tokens.
	APIKey          string
	TokenCredential azcore.TokenCredential

	// Language is the spoken language in ISO-639-1 (e.g. "en"); optional,
	// it improves accuracy and latency.
	Language string
	// Prompt guides the model's spelling and style; optional.
	Prompt string
	// MaxConcurrent bounds the transcriptions in flight: each holds its
	// audio (up to 25 MB) in memory. Further calls wait for a slot, as
	// long as their context allows. DefaultMaxConcurrent when 0.
	MaxConcurrent int
}

// DefaultMaxConcurrent is Config.MaxConcurrent's default: at most 100 MB
// of audio in memory.
const DefaultMaxConcurrent = 4

// Client is a brainwire.Transcriber. It is safe for concurrent use.
type Client struct {
	http     *http.Client
	url      string
	apiKey   string
	cred     azcore.TokenCredential
	language string
	prompt   string
	slots    chan struct{} // one per transcription in flight
}

var _ brainwire.Transcriber = (*Client)(nil)

// New returns a Client sending its requests with hc (nil means
// http.DefaultClient). It makes no request.
func New(cfg Config, hc *http.Client) (*Client, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("transcription: endpoint %q is not an http(s) URL without a query", cfg.Endpoint)
	}
	if cfg.Deployment == "" || strings.ContainsAny(cfg.Deployment, "/?#") {
		return nil, fmt.Errorf("transcription: invalid deployment name %q", cfg.Deployment)
	}
	switch {
	case cfg.APIKey != "" && cfg.TokenCredential != nil:
		return nil, errors.New("transcription: both an API key and a token credential are configured; choose one")
	case cfg.APIKey == "" && cfg.TokenCredential == nil:
		return nil, errors.New("transcription: no credential configured (API key or token credential)")
	}
	version := cfg.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/openai/deployments/" + cfg.Deployment + "/audio/transcriptions"
	u.RawPath = ""
	u.RawQuery = url.Values{"api-version": {version}}.Encode()
	return &Client{
		http:     hc,
		url:      u.String(),
		apiKey:   cfg.APIKey,
		cred:     cfg.TokenCredential,
		language: cfg.Language,
		prompt:   cfg.Prompt,
		slots:    make(chan struct{}, cmp.Or(max(cfg.MaxConcurrent, 0), DefaultMaxConcurrent)),
	}, nil
}

// Transcribe returns the text spoken in audio. filename and contentType
// describe the audio as it was uploaded; either is enough to tell its
// format (brainwire.AudioFormat). Audio that is empty, over
// brainwire.MaxAudioBytes or not in a supported format is an EInvalid error
// and is not sent; so is audio the service cannot decode. Failures of the service or its credentials are EUpstream
// errors, with the service's answer in an *APIError.
func (c *Client) Transcribe(ctx context.Context, audio io.Reader, filename, contentType string) (string, error) {
	filename, contentType, err := brainwire.AudioFormat(filename, contentType)
	if err != nil {
		return "", err
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return "", fmt.Errorf("transcription: waiting for a turn: %w: %w",
			brainwire.Errorf(brainwire.EUpstream, "the transcription service did not answer in time"), ctx.Err())
	}
	// The whole file is read first: its size must be known before sending,
	// and a known length lets the request be resent on redirects.
	data, err := io.ReadAll(io.LimitReader(audio, brainwire.MaxAudioBytes+1))
	if err != nil {
		return "", fmt.Errorf("transcription: reading the audio: %w", err)
	}
	if len(data) == 0 {
		return "", brainwire.Errorf(brainwire.EInvalid, "the audio is empty")
	}
	if len(data) > brainwire.MaxAudioBytes {
		return "", brainwire.Errorf(brainwire.EInvalid, "the audio is over the transcription limit of %d MB", brainwire.MaxAudioBytes>>20)
	}

	body, size, formType := c.form(filename, contentType, data)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, body())
	if err != nil {
		return "", fmt.Errorf("transcription: building the request: %w", err)
	}
	req.ContentLength = size
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body()), nil }
	req.Header.Set("Content-Type", formType)
	req.Header.Set("Accept", "application/json")
	if err := c.authorize(ctx, req); err != nil {
		return "", err
	}

	resp, err := c.http.Do(req)
	if err != nil {
		msg := "the transcription service could not be reached"
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "the transcription service did not answer in time"
		}
		return "", fmt.Errorf("transcription: %w: %w", brainwire.Errorf(brainwire.EUpstream, "%s", msg), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", newAPIError(resp)
	}

	var answer struct {
		Text *string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerSize)).Decode(&answer); err != nil {
		return "", fmt.Errorf("transcription: decoding the answer: %w: %w",
			brainwire.Errorf(brainwire.EUpstream, "the transcription service answered with malformed JSON"), err)
	}
	if answer.Text == nil {
		return "", brainwire.Errorf(brainwire.EUpstream, "the transcription service's answer has no text")
	}
	return strings.TrimSpace(*answer.Text), nil
}

// form lays out the multipart body around data without copying it. body
// gives a fresh reader over the whole form each call.
func (c *Client) form(filename, contentType string, data []byte) (body func() io.Reader, size int64, formType string) {
	var head bytes.Buffer
	w := multipart.NewWriter(&head)
	// Writes to a bytes.Buffer cannot fail.
	_ = w.WriteField("response_format", "json")
	if c.language != "" {
		_ = w.WriteField("language", c.language)
	}
	if c.prompt != "" {
		_ = w.WriteField("prompt", c.prompt)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", contentType)
	_, _ = w.CreatePart(h)
	prefix := bytes.Clone(head.Bytes())
	head.Reset()
	_ = w.Close()
	suffix := head.Bytes()
	body = func() io.Reader {
		return io.MultiReader(bytes.NewReader(prefix), bytes.NewReader(data), bytes.NewReader(suffix))
	}
	return body, int64(len(prefix) + len(data) + len(suffix)), w.FormDataContentType()
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")

func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	if c.apiKey != "" {
		req.Header.Set("api-key", c.apiKey)
		return nil
	}
	tok, err := c.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{TokenScope}})
	if err != nil {
		return fmt.Errorf("transcription: getting a token: %w: %w",
			brainwire.Errorf(brainwire.EUnavailable, "no credential for the transcription service"), err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	return nil
}

// Kind names the backend in health reports.
func (c *Client) Kind() string { return "azure_openai" }
