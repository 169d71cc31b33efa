package simulator

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire/internal/jsonw"
)

// MagicRefuse, followed by a status and optionally a count
// (#refuse:429, #refuse:503:3), has the simulator refuse each call of the
// run (the one that starts it and each carrying tool outputs, on every
// face) that many times (once without a count) before it serves it, as a
// throttled or briefly unavailable service does.
const MagicRefuse = "#refuse:"

// RefusalWait is the wait a refusal asks for (retry-after-ms), short so
// that a client that honours it tries again at once.
const RefusalWait = 5 * time.Millisecond

// maxRefusals bounds a #refuse count; maxRefusedCalls the calls whose
// refusals are remembered (beyond it, they start over).
const (
	maxRefusals     = 10
	maxRefusedCalls = 4096
)

// refusals are the service's answers to a #refuse: what it sends for each
// status, with the Azure OpenAI error codes.
var refusals = map[int]struct{ code, message string }{
	http.StatusRequestTimeout:      {"timeout", "The request timed out. Try again."},
	http.StatusTooManyRequests:     {"rate_limit_exceeded", "Rate limit is exceeded. Try again in 1 seconds."},
	http.StatusInternalServerError: {"server_error", "The service encountered an internal error. Try again."},
	http.StatusBadGateway:          {"bad_gateway", "The service received an invalid response from an upstream server. Try again."},
	http.StatusServiceUnavailable:  {"service_unavailable", "The service is temporarily unable to process your request. Try again later."},
	http.StatusGatewayTimeout:      {"timeout", "The service did not answer in time. Try again."},
}

// refusal is a run's #refuse: the status, and how many times each call is
// refused.
type refusal struct {
	status, times int
}

// parseRefusal reads the part of a #refuse tag after its prefix.
func parseRefusal(arg string) (refusal, bool) {
	status, count, hasCount := strings.Cut(arg, ":")
	code, err := strconv.Atoi(status)
	if _, ok := refusals[code]; err != nil || !ok {
		return refusal{}, false
	}
	r := refusal{status: code, times: 1}
	if hasCount {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return refusal{}, false
		}
		r.times = min(n, maxRefusals)
	}
	return r, true
}

// refused remembers how many times each call was refused, and counts the
// refusals by status (Stats).
type refused struct {
	mu       sync.Mutex
	calls    map[[sha256.Size]byte]int
	byStatus map[string]int64
}

// refuse answers the call call names (callKey, asked only under #refuse)
// with r's status when it has been refused fewer than r.times times; nil
// when it is to be served.
func (s *Simulator) refuse(r refusal, call func() [sha256.Size]byte) *httpError {
	if r.times == 0 {
		return nil
	}
	key := call()
	rf := &s.refused
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.calls == nil || len(rf.calls) >= maxRefusedCalls {
		rf.calls = map[[sha256.Size]byte]int{}
	}
	if rf.calls[key] >= r.times {
		return nil
	}
	rf.calls[key]++
	if rf.byStatus == nil {
		rf.byStatus = map[string]int64{}
	}
	rf.byStatus[strconv.Itoa(r.status)]++
	a := refusals[r.status]
	h := http.Header{}
	h.Set("retry-after-ms", strconv.FormatInt(RefusalWait.Milliseconds(), 10))
	h.Set("Retry-After", "1")
	return &httpError{status: r.status, code: a.code, message: a.message, header: h}
}

// refusedByStatus is a copy of the refusal counts; nil when there were
// none, as Stats reads back from its JSON.
func (s *Simulator) refusedByStatus() map[string]int64 {
	rf := &s.refused
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if len(rf.byStatus) == 0 {
		return nil
	}
	out := make(map[string]int64, len(rf.byStatus))
	for k, v := range rf.byStatus {
		out[k] = v
	}
	return out
}

// newRefusal is the #refuse of a run whose newest message from the user
// is the newest of msgs, else before (nil: none).
func newRefusal(msgs []*message, before *message) refusal {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].obj.Role == "user" {
			return parseMagic(msgs[i].text).refuse
		}
	}
	if before == nil {
		return refusal{}
	}
	return parseMagic(before.text).refuse
}

// callKey is what a call is known by across its attempts: its
// Idempotency-Key, else its body.
func callKey(req *http.Request, body any) [sha256.Size]byte {
	if k := req.Header.Get("Idempotency-Key"); k != "" {
		return sha256.Sum256([]byte("key:" + k))
	}
	b, _ := jsonw.Marshal(body) // it was decoded from JSON
	return sha256.Sum256(append([]byte("body:"), b...))
}
