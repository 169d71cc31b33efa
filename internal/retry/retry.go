// Package retry sends a call to the agent service again when the service
// refused it for a moment (408, 429, 500, 502, 503, 504) or the connection
// failed before any byte of the answer came. It is an http.RoundTripper:
// it decides before it returns the answer, so a stream, whose body is read
// after, is never sent twice once it delivered anything.
package retry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
	"github.com/brainwire/brainwire/internal/retryafter"
)

// How a call is sent again, as the OpenAI SDKs do: DefaultRetries times,
// DefaultBackoff first, doubled up to MaxBackoff; what retry-after-ms or
// Retry-After asks is waited up to MaxWait.
const (
	DefaultRetries = 2
	DefaultBackoff = 500 * time.Millisecond
	MaxBackoff     = 8 * time.Second
	MaxWait        = 60 * time.Second
)

// maxDrain bounds what is read of a failed answer's body before it is
// closed: the service's error message, kept in case it is the last.
const maxDrain = 64 << 10

// HeaderIdempotencyKey carries one value for every attempt of a POST, as
// the OpenAI SDKs send it, so a service that honours it does a create once.
const HeaderIdempotencyKey = "Idempotency-Key"

// Policy says when and how often a call is sent again. The zero value
// sends nothing again.
type Policy struct {
	// Retries is how many times a call may be sent again; 0 or less: none.
	Retries int
	// Backoff is the first wait (DefaultBackoff when 0), doubled each
	// time up to MaxBackoff, less up to a quarter of it at random. A wait
	// the service asks for (retry-after-ms, Retry-After) is taken
	// instead, up to MaxWait. A call whose wait, or the wait its service
	// asked for, would outlast the deadline of the request's context is
	// not sent again: its answer is returned at once.
	Backoff time.Duration

	// Observe, when set, is told of each call about to be sent again and
	// returns the context the new attempt is sent with (telemetry marks
	// it there).
	Observe func(ctx context.Context, r Retry) context.Context

	// Sleep waits d or until ctx ends; Now and Jitter (in [0, 1)) stand
	// for the clock and chance. Tests set them; nil: the real ones.
	Sleep  func(ctx context.Context, d time.Duration) error
	Now    func() time.Time
	Jitter func() float64
}

// Retry is a call about to be sent again.
type Retry struct {
	// Op is the call, as its provider named it (zero when it did not).
	Op brainwire.Operation
	// Count is how many times the call has been sent again, this time
	// included: 1 for the first retry.
	Count int
	// Reason is why: the status ("429", "503") or the connection's
	// failure ("connection_reset", "connection_refused", "timeout",
	// "connection").
	Reason string
	// Wait is how long it waited before sending again.
	Wait time.Duration
}

// Transport returns next sending refused calls again as p says; next
// itself when p sends nothing again.
func (p Policy) Transport(next http.RoundTripper) http.RoundTripper {
	if p.Retries <= 0 {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{p: p, next: next}
}

type transport struct {
	p    Policy
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The first attempt is sent from a small frame: every upstream call
	// of every capture goes through here, under the handler's stack, and
	// what is sent again is rare. The loop lives in again.
	op, _ := brainwire.OperationFrom(req.Context())
	if op.NoRetry || t.p.Retries <= 0 || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		// A probe, or a body that cannot be sent again.
		return t.next.RoundTrip(req)
	}
	req = keyed(req, op.Key)
	resp, err := t.next.RoundTrip(req)
	if reason, mayHaveDone := refused(req.Context(), resp, err); reason != "" {
		return t.again(req, &op, resp, err, reason, mayHaveDone)
	}
	return resp, err
}

// keyed is req with an Idempotency-Key (key, or a new one), when it is a
// POST without one.
//
//go:noinline
func keyed(req *http.Request, key string) *http.Request {
	if req.Method != http.MethodPost || hasKey(req.Header) {
		return req
	}
	if key == "" {
		key = NewKey()
	}
	req = req.Clone(req.Context())
	// In lower case (header names are case-insensitive; HTTP/2 sends them
	// so): net/http takes a canonical Idempotency-Key as licence to send a
	// POST again by itself when a reused connection fails, which would go
	// around the lookup in again.
	req.Header[strings.ToLower(HeaderIdempotencyKey)] = []string{key}
	return req
}

// again sends req again after its first attempt was refused (resp, err,
// for reason), as often as the policy and the run's deadline allow.
func (t *transport) again(req *http.Request, op *brainwire.Operation, resp *http.Response, err error, reason string, mayHaveDone bool) (*http.Response, error) {
	ctx := req.Context()
	retries, sparing := t.p.Retries, ctx.Value(sparingKey{}) != nil
	if sparing {
		retries = min(retries, 1)
	}
	for n := 0; ; n++ {
		if reason == "" || n >= retries || sparing && reason == strconv.Itoa(http.StatusTooManyRequests) {
			return resp, err
		}
		wait, asked := t.wait(n, resp)
		if dl, ok := ctx.Deadline(); ok && !t.now().Add(max(wait, asked)).Before(dl) {
			// The run would be over before the call went out again, or
			// before the service said it would take it.
			return resp, err
		}
		resp = drained(resp)
		if err := t.sleep(ctx, wait); err != nil {
			// An answer with an error is no answer (net/http drops it).
			closeBody(resp)
			return nil, err
		}
		if mayHaveDone && op.Took != nil {
			took, lerr := op.Took(ctx)
			if lerr != nil {
				// The service cannot tell: not sending again is what
				// cannot do the create twice. Why it could not tell
				// goes with the call's own failure: the log and
				// telemetry show it.
				return unsettled(resp, err, &LookupError{Op: op.Name, Reason: reason, Err: lerr})
			}
			if took {
				closeBody(resp)
				return nil, &agenterr.Error{
					Msg: "the agent service took the request but its answer was lost",
					Err: fmt.Errorf("%s: the service did the call, but its answer was lost (%s)", op.Name, reason),
				}
			}
		}
		if dl, ok := ctx.Deadline(); ok && !t.now().Before(dl) {
			// The lookup took what was left of the run.
			return resp, err
		}
		body, berr := reopen(req)
		if berr != nil {
			return resp, err
		}
		closeBody(resp)
		actx := ctx
		if t.p.Observe != nil {
			actx = t.p.Observe(ctx, Retry{Op: *op, Count: n + 1, Reason: reason, Wait: wait})
		}
		attempt := req.Clone(actx)
		attempt.Body = body
		resp, err = t.next.RoundTrip(attempt)
		reason, mayHaveDone = refused(ctx, resp, err)
	}
}

type sparingKey struct{}

// Sparing returns ctx whose calls are sent again at most once, and not
// at all when the service pushed back (429): calls that can be dropped (a
// shadow run's) give way to those a person waits for. Looked up only once
// a call was refused, so the calls it does not mark pay nothing.
func Sparing(ctx context.Context) context.Context {
	return context.WithValue(ctx, sparingKey{}, true)
}

// LookupError is the failure of asking the service whether it did a call
// whose answer was lost (brainwire.Operation.Took). The call is then not
// sent again: it fails as its last attempt did, with the LookupError in
// its error's chain (WithLookup), so that the log says why the service
// could not tell.
//
// Err, why the lookup failed, is not unwrapped: what the capture is told
// stays decided by the call's own failure, not by the lookup's (a lookup
// refused for want of a permission does not make an unreachable service
// brainwire's failure to sign in).
type LookupError struct {
	// Op names the call looked up, Reason why its answer was lost (as
	// Retry.Reason).
	Op, Reason string
	Err        error
}

func (e *LookupError) Error() string {
	return e.Op + ": its answer was lost (" + e.Reason + "), and looking it up failed: " + e.Err.Error()
}

// Is matches what Err matches: errors.Is finds a lookup's cause, which
// errors.As, deciding the capture's code, does not.
func (e *LookupError) Is(target error) bool { return errors.Is(e.Err, target) }

// lookupFailed is a call's failure (err) whose lookup failed: it reads as
// err, and holds the lookup's failure after it.
type lookupFailed struct {
	err    error
	lookup *LookupError
}

func (e *lookupFailed) Error() string   { return e.err.Error() + "; " + e.lookup.Error() }
func (e *lookupFailed) Unwrap() []error { return []error{e.err, e.lookup} }

// unsettled is the outcome of a call whose lookup failed (l): its last
// attempt's error with l in its chain, or its last answer, carrying l in
// its body for the client that reads the answer as an error (WithLookup).
func unsettled(resp *http.Response, err error, l *LookupError) (*http.Response, error) {
	if err != nil {
		return nil, &lookupFailed{err: err, lookup: l}
	}
	resp.Body = &lookedUp{ReadCloser: resp.Body, lookup: l}
	return resp, nil
}

// lookedUp is the body of an answer returned because its call's lookup
// failed.
type lookedUp struct {
	io.ReadCloser
	lookup *LookupError
}

// WithLookup returns err, the error a client made of resp, a failed
// answer, with the failure of the lookup that left resp the call's answer
// in its chain, when one did (the retry layer returns such an answer as it
// came, its body unwrapped by what sits between); else err.
func WithLookup(err error, resp *http.Response) error {
	if l, ok := resp.Body.(*lookedUp); ok && err != nil {
		return &lookupFailed{err: err, lookup: l.lookup}
	}
	return err
}

// NewKey returns a new Idempotency-Key: 26 random characters.
func NewKey() string { return rand.Text() }

// hasKey says whether h carries an Idempotency-Key, in either case.
func hasKey(h http.Header) bool {
	return h.Get(HeaderIdempotencyKey) != "" || len(h[strings.ToLower(HeaderIdempotencyKey)]) > 0
}

// reopen is the request's body, from its start, for another attempt.
func reopen(req *http.Request) (io.ReadCloser, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req.Body, nil
	}
	return req.GetBody()
}

// refused says why a call's outcome may be sent again ("" when it may
// not), and whether the service may have done it all the same.
func refused(ctx context.Context, resp *http.Response, err error) (reason string, mayHaveDone bool) {
	if err != nil {
		if ctx.Err() != nil || !transient(err) {
			return "", false
		}
		return connReason(err), !notSent(err)
	}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return strconv.Itoa(resp.StatusCode), false
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		// A gateway may answer so in front of a service that did the work.
		return strconv.Itoa(resp.StatusCode), true
	}
	return "", false
}

// transient says whether a failed connection may go better next time: a
// certificate the client refuses will not.
func transient(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return !errors.As(err, &unknown) && !errors.As(err, &hostname) && !errors.As(err, &invalid) && !errors.As(err, &verify)
}

// notSent says whether a failure came before the request was written:
// dialling, resolving the name, the TLS handshake.
func notSent(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &dns), errors.As(err, &rh), errors.Is(err, syscall.ECONNREFUSED):
		return true
	case errors.As(err, &op):
		return op.Op == "dial"
	}
	return false
}

// connReason names a connection's failure for telemetry.
func connReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "connection"
}

// wait is how long to wait before the (n+1)-th resend: what the service
// asked for, up to MaxWait, else the backoff; and what the service asked
// for (0 when it did not say).
func (t *transport) wait(n int, resp *http.Response) (wait, asked time.Duration) {
	if d, ok := askedFor(resp, t.now()); ok {
		return min(d, MaxWait), d
	}
	base := t.p.Backoff
	if base <= 0 {
		base = DefaultBackoff
	}
	d := MaxBackoff
	if n < 30 {
		d = min(base<<n, MaxBackoff)
	}
	j := t.p.Jitter
	if j == nil {
		j = mrand.Float64
	}
	return time.Duration(float64(d) * (1 - 0.25*j())), 0
}

// askedFor is the wait the answer asks for (retryafter.Parse).
func askedFor(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	return retryafter.Parse(resp.Header, now)
}

// drained reads what is left of a failed answer's body (at most maxDrain
// bytes) and closes it, giving its connection back; the answer keeps the
// bytes, in case it is the one returned.
func drained(resp *http.Response) *http.Response {
	if resp == nil || resp.Body == nil {
		return resp
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxDrain))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

func closeBody(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
}

func (t *transport) now() time.Time {
	if t.p.Now != nil {
		return t.p.Now()
	}
	return time.Now()
}

func (t *transport) sleep(ctx context.Context, d time.Duration) error {
	if t.p.Sleep != nil {
		return t.p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits d, or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
