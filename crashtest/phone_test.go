package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	phoneKey  = "crash-phone-key-0123456789"
	phoneUser = "phone"
)

// capture is one thought a phone sends, and what became of it.
type capture struct {
	n     int
	key   string // Idempotency-Key, the same on every attempt
	text  string // typed, or spoken into audio
	audio []byte // a voice capture's recording; nil for text

	// What the phone heard: the outcome frame, its type and item, from
	// which replica, on which attempt, and whether it was a replay.
	heard    string
	kind     string
	itemID   string
	from     string
	attempts int
	replayed bool
	// failures counts the attempts that failed, by why.
	failures map[string]int
}

// attempt is how one request of a capture ended.
type attempt struct {
	status     int
	retryAfter time.Duration
	outcome    string // the outcome frame, when one was heard
	kind       string // its type
	itemID     string
	errCode    string // an ERROR frame's code
	replayed   bool
	err        error
}

// outcomeTypes are the capture-v2 frames that tell a phone what became of
// its capture.
var outcomeTypes = map[string]bool{"CLASSIFIED": true, "LOW_CONFIDENCE": true, "MISUNDERSTOOD": true, "UNRESOLVED": true}

// send posts c once to base, reading the stream until its outcome, its
// end or giveUp (the phone hangs up, as a person walking into a tunnel).
func send(ctx context.Context, client *http.Client, base string, c *capture, giveUp time.Duration) attempt {
	ctx, cancel := context.WithTimeout(ctx, giveUp)
	defer cancel()
	req, err := newRequest(ctx, base, c)
	if err != nil {
		return attempt{err: err}
	}
	resp, err := client.Do(req)
	if err != nil {
		return attempt{err: err}
	}
	defer resp.Body.Close()
	a := attempt{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		a.retryAfter = time.Duration(s) * time.Second
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return a
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Code  string `json:"code"`
			Value struct {
				InboxItemID string `json:"inboxItemId"`
			} `json:"value"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			a.err = fmt.Errorf("a frame that is not JSON: %q", data)
			return a
		}
		switch {
		case outcomeTypes[ev.Type]:
			a.outcome, a.kind, a.itemID = data, ev.Type, ev.Value.InboxItemID
			return a
		case ev.Type == "ERROR":
			a.errCode = ev.Code
		}
	}
	if a.errCode == "" {
		a.err = sc.Err()
		if a.err == nil {
			a.err = errors.New("the stream ended without an outcome")
		}
	}
	return a
}

// newRequest is c's request: JSON text, or the recording as a voice
// upload.
func newRequest(ctx context.Context, base string, c *capture) (*http.Request, error) {
	var req *http.Request
	var err error
	if c.audio == nil {
		body, _ := json.Marshal(map[string]string{"text": c.text})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/capture", bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "note.wav")
		fw.Write(c.audio)
		mw.Close()
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/capture/voice", &buf)
		if err == nil {
			req.Header.Set("Content-Type", mw.FormDataContentType())
		}
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	req.Header.Set("Idempotency-Key", c.key)
	return req, nil
}

// reason names why an attempt did not hear an outcome.
func (a attempt) reason() string {
	switch {
	case a.err != nil && a.status == 0:
		return "no answer"
	case a.err != nil:
		return "stream broke"
	case a.errCode != "":
		return "ERROR " + a.errCode
	}
	return strconv.Itoa(a.status)
}

// phone sends captures, each until it hears an outcome, to a replica it
// picks at random each time, and tells heard of every outcome, with the
// replica and whether it was a replay. It hangs up on an attempt now and
// then (hangUp of them) and after giveUp.
type phone struct {
	client   *http.Client
	replicas []*replica
	rng      *rand.Rand
	hangUp   float64
	giveUp   time.Duration
	heard    func(r *replica, replayed bool)
}

func (p *phone) run(ctx context.Context, c *capture) error {
	c.failures = map[string]int{}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("capture %d heard no outcome after %d attempts (%v): %w", c.n, c.attempts, c.failures, err)
		}
		r := p.replicas[p.rng.IntN(len(p.replicas))]
		limit := p.giveUp
		if p.rng.Float64() < p.hangUp {
			limit = time.Duration(50+p.rng.IntN(1500)) * time.Millisecond
		}
		c.attempts++
		a := send(ctx, p.client, r.base(), c, limit)
		if a.outcome != "" {
			c.heard, c.kind, c.itemID, c.from, c.replayed = a.outcome, a.kind, a.itemID, r.name, a.replayed
			p.heard(r, a.replayed)
			return nil
		}
		c.failures[a.reason()]++
		wait := time.Duration(100+p.rng.IntN(300)) * time.Millisecond
		if a.retryAfter > 0 {
			wait = min(a.retryAfter, 3*time.Second)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
}

// phones send every capture, n phones at once, and return why captures
// never heard an outcome.
func phones(ctx context.Context, n int, captures []*capture, newPhone func(i int) *phone) []error {
	queue := make(chan *capture)
	go func() {
		defer close(queue)
		for _, c := range captures {
			select {
			case queue <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		p := newPhone(i)
		wg.Go(func() {
			for c := range queue {
				if err := p.run(ctx, c); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}
