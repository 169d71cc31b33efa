package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/retry"
)

// service answers each call with the next of its answers (the last one
// ever after) and keeps what it was sent.
type service struct {
	t       *testing.T
	answers []func(w http.ResponseWriter)
	mu      sync.Mutex
	got     []sent
}

type sent struct {
	body, key string
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, sent{body: string(b), key: r.Header.Get(retry.HeaderIdempotencyKey)})
	s.mu.Unlock()
	s.answers[min(n, len(s.answers)-1)](w)
}

func (s *service) sent() []sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sent(nil), s.got...)
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"error":{"message":"`+http.StatusText(code)+`"}}`)
	}
}

// reset reads the request and drops the connection without a byte.
func reset(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// sleeps records the waits instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func start(t *testing.T, answers ...func(http.ResponseWriter)) (*service, string) {
	t.Helper()
	s := &service{t: t, answers: answers}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func post(t *testing.T, ctx context.Context, rt http.RoundTripper, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if resp != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

func TestRefusedCallsAreSentAgainWithTheSameBodyAndKey(t *testing.T) {
	for _, code := range []int{408, 429, 500, 502, 503, 504} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			svc, url := start(t, status(code, "retry-after-ms", "7"), status(200))
			sl := &sleeps{}
			var seen []retry.Retry
			p := retry.Policy{Retries: 2, Sleep: sl.sleep, Observe: func(ctx context.Context, r retry.Retry) context.Context {
				seen = append(seen, r)
				return ctx
			}}
			ctx := brainwire.WithOperation(t.Context(), brainwire.Operation{Name: "create_response"})
			resp, err := post(t, ctx, p.Transport(nil), url)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v, %v; want 200", resp, err)
			}
			got := svc.sent()
			if len(got) != 2 || got[0] != got[1] || got[0].body != `{"input":"hi"}` || got[0].key == "" {
				t.Fatalf("sent %+v; want the same body and Idempotency-Key twice", got)
			}
			if w := sl.waits(); len(w) != 1 || w[0] != 7*time.Millisecond {
				t.Errorf("waited %v; want the 7ms retry-after-ms asked", w)
			}
			if len(seen) != 1 || seen[0].Count != 1 || seen[0].Reason != strconv.Itoa(code) || seen[0].Op.Name != "create_response" {
				t.Errorf("observed %+v", seen)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header []string
		want   time.Duration
	}{
		{"seconds", []string{"Retry-After", "3"}, 3 * time.Second},
		{"date", []string{"Retry-After", now.Add(5 * time.Second).Format(http.TimeFormat)}, 5 * time.Second},
		{"ms before seconds", []string{"retry-after-ms", "250", "Retry-After", "3"}, 250 * time.Millisecond},
		{"capped", []string{"Retry-After", "3600"}, retry.MaxWait},
		// Absurd hints are long waits, never negative ones sent at once.
		{"1e30 milliseconds", []string{"retry-after-ms", "1e30"}, retry.MaxWait},
		{"99999999999 seconds", []string{"Retry-After", "99999999999"}, retry.MaxWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := start(t, status(429, tc.header...), status(200))
			sl := &sleeps{}
			p := retry.Policy{Retries: 1, Sleep: sl.sleep, Now: func() time.Time { return now }}
			if resp, err := post(t, t.Context(), p.Transport(nil), url); err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v, %v; want 200", resp, err)
			}
			if w := sl.waits(); len(w) != 1 || w[0] != tc.want {
				t.Errorf("waited %v; want %v", w, tc.want)
			}
		})
	}
}

func TestBackoffDoublesWithJitter(t *testing.T) {
	svc, url := start(t, status(503))
	sl := &sleeps{}
	p := retry.Policy{Retries: 6, Sleep: sl.sleep, Jitter: func() float64 { return 0.5 }}
	resp, err := post(t, t.Context(), p.Transport(nil), url)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("got %v, %v; want the last 503", resp, err)
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "Service Unavailable") {
		t.Errorf("the last answer's body is %q; want the service's error", b)
	}
	if n := len(svc.sent()); n != 7 {
		t.Errorf("sent %d times; want 1 + 6 retries", n)
	}
	j := func(d time.Duration) time.Duration { return d * 7 / 8 }
	want := []time.Duration{j(500 * time.Millisecond), j(time.Second), j(2 * time.Second), j(4 * time.Second), j(retry.MaxBackoff), j(retry.MaxBackoff)}
	if got := sl.waits(); !slices.Equal(got, want) {
		t.Errorf("waited %v; want %v", got, want)
	}
}

// A wait past the run's deadline is not started: the wait brainwire would
// take, or the one the service asked for even when what brainwire would
// take (MaxWait) fits, as the service said it would refuse the call until
// then. An absurd hint is a long wait, never a negative one.
func TestAWaitPastTheDeadlineIsNotStarted(t *testing.T) {
	for _, c := range []struct {
		hint     []string
		deadline time.Duration
	}{
		{[]string{"Retry-After", "30"}, 10 * time.Second},
		{[]string{"retry-after-ms", "1e30"}, 10 * time.Second},
		{[]string{"Retry-After", "99999999999"}, 10 * time.Second},
		{[]string{"Retry-After", "3600"}, 2 * time.Minute},
		{[]string{"retry-after-ms", "300000"}, 2 * time.Minute},
	} {
		t.Run(fmt.Sprintf("%s: %s, %v left", c.hint[0], c.hint[1], c.deadline), func(t *testing.T) {
			svc, url := start(t, status(429, c.hint...), status(200))
			sl := &sleeps{}
			p := retry.Policy{Retries: 2, Sleep: sl.sleep}
			ctx, cancel := context.WithTimeout(t.Context(), c.deadline)
			defer cancel()
			resp, err := post(t, ctx, p.Transport(nil), url)
			if err != nil || resp.StatusCode != 429 {
				t.Fatalf("got %v, %v; want the 429", resp, err)
			}
			if n, w := len(svc.sent()), sl.waits(); n != 1 || len(w) != 0 {
				t.Errorf("sent %d times after waits %v; want once, no wait", n, w)
			}
		})
	}
}

func TestWaitingStopsWithTheContext(t *testing.T) {
	svc, url := start(t, status(503, "retry-after-ms", "60000"), status(200))
	ctx, cancel := context.WithCancel(t.Context())
	p := retry.Policy{Retries: 2, Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		return retry.Sleep(ctx, d)
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"input":"hi"}`))
	resp, err := p.Transport(http.DefaultTransport).RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, context.Canceled) || resp != nil {
		t.Fatalf("got %v, %v; want the context's end alone", resp, err)
	}
	if n := len(svc.sent()); n != 1 {
		t.Errorf("sent %d times; want once", n)
	}
}

func TestAStreamThatBeganIsNotSentAgain(t *testing.T) {
	svc, url := start(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.created\ndata: {}\n\n")
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep}
	resp, err := post(t, t.Context(), p.Transport(nil), url)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want the stream", resp, err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the cut stream read to its end")
	}
	if n := len(svc.sent()); n != 1 {
		t.Errorf("sent %d times; want once", n)
	}
}

func TestALostAnswerIsLookedUpNotRepeated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(http.ResponseWriter)
		took   bool
		lookup error
		sends  int
		ok     bool
	}{
		{"reset, taken", reset, true, nil, 1, false},
		{"reset, not taken", reset, false, nil, 2, true},
		{"502, taken", status(502), true, nil, 1, false},
		{"504, lookup fails", status(504), false, errors.New("listing the conversation's items: 503 Service Unavailable"), 1, false},
		{"reset, lookup fails", reset, false, errors.New("listing the conversation's items: connection refused"), 1, false},
		{"429 is never looked up", status(429, "retry-after-ms", "0"), true, nil, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, url := start(t, tc.fault, status(200))
			asked := 0
			op := brainwire.Operation{Name: "submit_tool_outputs", Took: func(context.Context) (bool, error) {
				asked++
				return tc.took, tc.lookup
			}}
			p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep}
			resp, err := post(t, brainwire.WithOperation(t.Context(), op), p.Transport(nil), url)
			if ok := err == nil && resp.StatusCode == 200; ok != tc.ok {
				t.Fatalf("got %v, %v; want success %v", resp, err, tc.ok)
			}
			if n := len(svc.sent()); n != tc.sends {
				t.Errorf("sent %d times; want %d", n, tc.sends)
			}
			var be *brainwire.Error
			if tc.took && tc.sends == 1 && (!errors.As(err, &be) || be.Code != brainwire.EUpstream || !strings.Contains(be.Message, "answer was lost")) {
				t.Errorf("error %v; want an upstream error saying the answer was lost", err)
			}
		})
	}
}

// A lookup that fails leaves the call failed as its last attempt did,
// told to the capture alike, with why the service could not tell in the
// error's chain: it is there for the log, and decides nothing (here it
// would read as brainwire's failure to sign in).
func TestAFailedLookupIsInTheChain(t *testing.T) {
	refusedLookup := &brainwire.Error{Code: brainwire.EUpstreamAuth, Message: "brainwire could not sign in to the agent service"}
	for _, tc := range []struct {
		name  string
		fault func(http.ResponseWriter)
		code  string // what the call's failure reads as; "": no application error
	}{
		{"reset", reset, ""},
		{"504", status(504), brainwire.EUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, url := start(t, tc.fault, status(200))
			op := brainwire.Operation{Name: "submit_tool_outputs", Took: func(context.Context) (bool, error) {
				return false, fmt.Errorf("getting run r1: %w", refusedLookup)
			}}
			p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep}
			resp, err := post(t, brainwire.WithOperation(t.Context(), op), p.Transport(nil), url)
			if n := len(svc.sent()); n != 1 {
				t.Errorf("sent %d times; want once", n)
			}
			if resp != nil {
				// The client reads the answer as its error.
				if resp.StatusCode != 504 {
					t.Fatalf("answer %s; want the 504", resp.Status)
				}
				if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "Gateway Timeout") {
					t.Errorf("the answer's body is %q; want the service's error", b)
				}
				err = retry.WithLookup(&brainwire.Error{Code: brainwire.EUpstream, Message: "Gateway Timeout"}, resp)
			}
			var l *retry.LookupError
			if !errors.As(err, &l) || l.Op != "submit_tool_outputs" || !errors.Is(err, refusedLookup) {
				t.Fatalf("error %v; want the lookup's failure in its chain", err)
			}
			if !strings.Contains(err.Error(), "submit_tool_outputs: its answer was lost ("+l.Reason+"), and looking it up failed: getting run r1") {
				t.Errorf("error %q does not say why the lookup failed", err)
			}
			got := ""
			if be := (*brainwire.Error)(nil); errors.As(err, &be) {
				got = be.Code
			}
			if got != tc.code {
				t.Errorf("the error reads as %q; want %q, as without the lookup", got, tc.code)
			}
		})
	}
}

func TestAFailureBeforeSendingIsSentAgainWithoutLookup(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // refused
	svc, live := start(t, status(200))
	asked := false
	op := brainwire.Operation{Name: "create_response", Took: func(context.Context) (bool, error) { asked = true; return true, nil }}
	p := retry.Policy{Retries: 1, Sleep: (&sleeps{}).sleep}
	// The first attempt dials a closed port; the retry goes to a live one.
	rt := &redirectAfterFirst{to: strings.TrimPrefix(live, "http://"), next: http.DefaultTransport}
	resp, err := post(t, brainwire.WithOperation(t.Context(), op), p.Transport(rt), url)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v, %v; want 200", resp, err)
	}
	if asked || len(svc.sent()) != 1 {
		t.Errorf("looked up %v, sent to the live service %d times; want no lookup, once", asked, len(svc.sent()))
	}
}

// redirectAfterFirst sends every attempt but the first to another host.
type redirectAfterFirst struct {
	to   string
	next http.RoundTripper
	n    int
}

func (r *redirectAfterFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n++
	if r.n > 1 {
		req = req.Clone(req.Context())
		req.URL.Host = r.to
	}
	return r.next.RoundTrip(req)
}

func TestAProbeIsNotSentAgain(t *testing.T) {
	svc, url := start(t, status(503), status(200))
	p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep}
	ctx := brainwire.WithOperation(t.Context(), brainwire.Operation{Name: "get_agent", NoRetry: true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := p.Transport(nil).RoundTrip(req)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("got %v, %v; want the 503", resp, err)
	}
	resp.Body.Close()
	if n := len(svc.sent()); n != 1 {
		t.Errorf("sent %d times; want once", n)
	}
}

// A lookup that takes what was left of the run sends nothing again.
func TestALookupPastTheDeadlineSendsNothingAgain(t *testing.T) {
	svc, url := start(t, status(502), status(200))
	now := time.Now()
	clock := now
	op := brainwire.Operation{Name: "create_message", Took: func(context.Context) (bool, error) {
		clock = now.Add(time.Minute)
		return false, nil
	}}
	p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep, Now: func() time.Time { return clock }, Backoff: time.Millisecond}
	ctx, cancel := context.WithDeadline(brainwire.WithOperation(t.Context(), op), now.Add(30*time.Second))
	defer cancel()
	resp, err := post(t, ctx, p.Transport(nil), url)
	if err != nil || resp.StatusCode != 502 {
		t.Fatalf("got %v, %v; want the 502", resp, err)
	}
	if n := len(svc.sent()); n != 1 {
		t.Errorf("sent %d times; want once", n)
	}
}

// A sparing call is sent again at most once, and not after a 429; the
// same refusals without the mark are sent again as the policy says.
func TestASparingCallIsSentAgainAtMostOnceAndNeverAfter429(t *testing.T) {
	for _, tc := range []struct {
		code            int
		sparing         bool
		sent, wantFinal int
	}{
		{503, false, 3, 503},
		{503, true, 2, 503},
		{429, false, 3, 429},
		{429, true, 1, 429},
	} {
		t.Run(fmt.Sprint(tc.code, tc.sparing), func(t *testing.T) {
			svc, url := start(t, status(tc.code))
			p := retry.Policy{Retries: 2, Sleep: (&sleeps{}).sleep}
			ctx := t.Context()
			if tc.sparing {
				ctx = retry.Sparing(ctx)
			}
			resp, err := post(t, ctx, p.Transport(nil), url)
			if err != nil || resp.StatusCode != tc.wantFinal {
				t.Fatalf("got %v, %v; want the %d", resp, err, tc.wantFinal)
			}
			if n := len(svc.sent()); n != tc.sent {
				t.Errorf("sent %d times; want %d", n, tc.sent)
			}
		})
	}
}
