package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
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
	fp, err := s.decodeJSON(w, r, &req, true)
	if err != nil {
		writeError(w, err)
		return
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "text is required"))
		return
	}
	s.runText(w, r, text, req.ThreadID, req.RunID, fp, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// runText checks a text capture, the same on every route, and runs it.
func (s *Server) runText(w http.ResponseWriter, r *http.Request, text, threadID, runID string, fp *fingerprint, newEncoder func(brainwire.Capture) encoder) {
	if err := brainwire.CheckText("text", text); err != nil {
		writeError(w, err)
		return
	}
	if n := utf8.RuneCountInString(text); n > s.cfg.MaxTextLength {
		writeError(w, brainwire.Errorf(brainwire.ETooLarge, "text is %d characters; the limit is %d", n, s.cfg.MaxTextLength))
		return
	}
	c, err := s.newCapture(r, brainwire.KindText, threadID, runID)
	if err != nil {
		writeError(w, err)
		return
	}
	c.Text = text
	s.runCapture(w, r, fp.request(c), newEncoder)
}

// jsonBody is the request's application/json body, of at most limit
// bytes: a body that declares more is refused before any of it is read,
// and one that turns out longer fails its read at the limit (bodyError).
func jsonBody(w http.ResponseWriter, r *http.Request, limit int64) (io.Reader, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/json" {
		return nil, &brainwire.Error{Code: errUnsupportedMedia, Message: "Content-Type must be application/json"}
	}
	if r.ContentLength > limit {
		return nil, bodyError(&http.MaxBytesError{Limit: limit})
	}
	return http.MaxBytesReader(w, r.Body, limit), nil
}

// decodeJSON reads a whole JSON body within the size limit (jsonBody) and
// decodes it into v, for every JSON route but AG-UI's (which streams, from
// jsonBody too), and returns the request's fingerprint for its
// Idempotency-Key, if it has one. Strict, it refuses unknown fields, so a
// client's typo is a clear 400; the routes of earlier app builds take
// what those builds sent, extras and all. The body is read whole (bodies
// are small) so that bytes that are not UTF-8 are refused, not silently
// turned into U+FFFD.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any, strict bool) (*fingerprint, error) {
	rd, err := jsonBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		return nil, bodyError(err)
	}
	if !utf8.Valid(body) {
		return nil, brainwire.Errorf(brainwire.EInvalid, "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return nil, brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, brainwire.Errorf(brainwire.EInvalid, "malformed JSON body: more than one JSON value")
	}
	fp := newFingerprint(r)
	fp.add(body)
	return fp, nil
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
