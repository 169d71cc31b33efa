package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/capture"
)

// A capture request may carry an Idempotency-Key (the IETF httpapi draft
// "The Idempotency-Key HTTP Header Field"), so that the phone can retry a
// capture whose stream broke without filing it twice: the capture runs
// under it (package capture). Repeats of a request whose capture reached
// the store replay its outcome in their protocol, with
// Idempotent-Replayed: true; a repeat while the first still runs gets 409
// with Retry-After; a repeat that is another request (route or body) gets
// 422.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	// maxIdempotencyKey bounds a key, in characters.
	maxIdempotencyKey = 255
	// keyRetryAfter is the Retry-After of a 409 for a key whose capture
	// is still running: captures take seconds.
	keyRetryAfter = 3 * time.Second
)

type idempotencyKeyCtx struct{}

// idempotent refuses a malformed Idempotency-Key with 400 before anything
// of the request is read, and passes a well-formed one on in the context.
func (s *Server) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(headerIdempotencyKey)
		if len(vals) == 0 {
			next(w, r)
			return
		}
		key, err := parseIdempotencyKey(vals)
		if err != nil {
			writeError(w, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), idempotencyKeyCtx{}, key)))
	}
}

// parseIdempotencyKey reads the header's value: a Structured Field string
// (RFC 9651, `"..."` with \" and \\ escapes) as the draft has it, or,
// leniently, a bare token such as a UUID, as many clients send it: a token
// character (RFC 9110 tchar) or, as in a Structured Field token, ':' or
// '/'. A key is 1 to maxIdempotencyKey printable ASCII characters.
func parseIdempotencyKey(vals []string) (string, error) {
	bad := func(why string) error {
		return brainwire.Errorf(brainwire.EInvalid, "Idempotency-Key %s: send one quoted string (or a token such as a UUID) of 1 to %d printable ASCII characters", why, maxIdempotencyKey)
	}
	if len(vals) != 1 {
		return "", bad("is repeated")
	}
	v := strings.Trim(vals[0], " \t")
	var key string
	switch {
	case sfString.MatchString(v):
		key = sfUnescape.Replace(v[1 : len(v)-1])
	case bareKey.MatchString(v):
		key = v
	default:
		return "", bad("is neither a quoted string nor a token")
	}
	switch n := len(key); {
	case n == 0:
		return "", bad("is empty")
	case n > maxIdempotencyKey:
		return "", bad("is over " + strconv.Itoa(maxIdempotencyKey) + " characters")
	}
	return key, nil
}

var (
	sfString   = regexp.MustCompile(`^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"$`)
	sfUnescape = strings.NewReplacer(`\"`, `"`, `\\`, `\`)
	bareKey    = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~:/-]+$")
)

// requestKey is the request's Idempotency-Key, "" when it has none.
func requestKey(r *http.Request) string {
	k, _ := r.Context().Value(idempotencyKeyCtx{}).(string)
	return k
}

// fingerprint identifies a capture request under its Idempotency-Key: a
// hash of its route and of what it asks for (the body, or a voice
// upload's fields and audio). Nil when the request has no key: there is
// nothing to compare.
type fingerprint struct {
	key string
	h   hash.Hash
}

func newFingerprint(r *http.Request) *fingerprint {
	key := requestKey(r)
	if key == "" {
		return nil
	}
	f := &fingerprint{key: key, h: sha256.New()}
	f.add([]byte(r.Method + " " + r.URL.Path))
	return f
}

// add adds one part, length first, so that parts cannot run into each
// other.
func (f *fingerprint) add(part []byte) {
	if f == nil {
		return
	}
	f.h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(part))))
	f.h.Write(part)
}

// Write adds bytes as they stream in, for a part read as it arrives (an
// AG-UI body): it must be the last part.
func (f *fingerprint) Write(p []byte) (int, error) {
	f.h.Write(p)
	return len(p), nil
}

// request is capture c to run under the request's key, if it has one.
func (f *fingerprint) request(c brainwire.Capture) capture.Request {
	if f == nil {
		return capture.Request{Capture: c}
	}
	return capture.Request{Capture: c, Key: f.key, Fingerprint: hex.EncodeToString(f.h.Sum(nil))}
}
