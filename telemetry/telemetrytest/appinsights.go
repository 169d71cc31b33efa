package telemetrytest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Ingestion modes.
const (
	IngestOK   = iota // 200 with the accepted count
	IngestFail        // 500
	IngestHang        // never answers until the client gives up or Release
)

// Ingestion is an Application Insights ingestion endpoint for tests: it
// accepts POST /v2/track with gzip-compressed, newline-delimited JSON
// envelopes, as the service does, and keeps what it received.
type Ingestion struct {
	srv     *httptest.Server
	release chan struct{}
	relOnce sync.Once

	mu        sync.Mutex
	mode      int
	envelopes []Envelope
	raw       []received // decompressed request bodies
	parsed    int        // how many of raw are in envelopes
	requests  int
	errs      []string
}

// Envelope is one received telemetry item.
type Envelope struct {
	// Received is when the endpoint accepted the envelope's request.
	Received time.Time         `json:"-"`
	Name     string            `json:"name"`
	Time     string            `json:"time"`
	IKey     string            `json:"iKey"`
	Tags     map[string]string `json:"tags"`
	Data     struct {
		BaseType string   `json:"baseType"`
		BaseData BaseData `json:"baseData"`
	} `json:"data"`
}

// BaseData holds the fields of the item types the tests look at.
type BaseData struct {
	Ver           int                `json:"ver"`
	Message       string             `json:"message"`
	SeverityLevel int                `json:"severityLevel"`
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	Duration      string             `json:"duration"`
	ResponseCode  string             `json:"responseCode"`
	Success       bool               `json:"success"`
	Properties    map[string]string  `json:"properties"`
	Measurements  map[string]float64 `json:"measurements"`
}

// received is one request's decompressed body and when it arrived.
type received struct {
	body []byte
	at   time.Time
}

// NewIngestion starts an endpoint in mode; it is closed when the test ends.
func NewIngestion(t testing.TB, mode int) *Ingestion {
	in := &Ingestion{mode: mode, release: make(chan struct{})}
	in.srv = httptest.NewServer(http.HandlerFunc(in.serve))
	t.Cleanup(func() {
		in.Release()
		in.srv.Close()
	})
	return in
}

// ConnectionString points an Application Insights client at the endpoint.
func (in *Ingestion) ConnectionString() string {
	return "InstrumentationKey=00000000-0000-0000-0000-000000000001;IngestionEndpoint=" + in.srv.URL + "/;LiveEndpoint=" + in.srv.URL + "/"
}

// SetMode changes how later requests are answered.
func (in *Ingestion) SetMode(mode int) {
	in.mu.Lock()
	in.mode = mode
	in.mu.Unlock()
}

// Release lets hanging requests go.
func (in *Ingestion) Release() { in.relOnce.Do(func() { close(in.release) }) }

func (in *Ingestion) serve(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	in.requests++
	mode := in.mode
	in.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v2/track" {
		in.fail("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	switch mode {
	case IngestHang:
		select {
		case <-r.Context().Done():
		case <-in.release:
		}
		return
	case IngestFail:
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, `{"itemsReceived":0,"itemsAccepted":0,"errors":[]}`, http.StatusInternalServerError)
		return
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		in.fail("Content-Encoding is %q, want gzip", r.Header.Get("Content-Encoding"))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-json-stream" {
		in.fail("Content-Type is %q, want application/x-json-stream", ct)
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		in.fail("body is not gzip: %v", err)
		http.Error(w, "bad gzip", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		in.fail("reading gzip body: %v", err)
		http.Error(w, "bad gzip", http.StatusBadRequest)
		return
	}
	// Envelopes are parsed when a test asks for them, off the captures'
	// CPU.
	n := bytes.Count(body, []byte("\n"))
	in.mu.Lock()
	in.raw = append(in.raw, received{body, time.Now()})
	in.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"itemsReceived":%d,"itemsAccepted":%d,"errors":[]}`, n, n)
}

// parse decodes the bodies received since the last call; in.mu is held.
func (in *Ingestion) parse() {
	for _, req := range in.raw[in.parsed:] {
		sc := bufio.NewScanner(bytes.NewReader(req.body))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			env := Envelope{Received: req.at}
			if err := json.Unmarshal(line, &env); err != nil {
				in.errs = append(in.errs, fmt.Sprintf("envelope is not JSON: %v: %.200s", err, line))
				continue
			}
			in.envelopes = append(in.envelopes, env)
		}
	}
	in.parsed = len(in.raw)
}

func (in *Ingestion) fail(format string, args ...any) {
	in.mu.Lock()
	in.errs = append(in.errs, fmt.Sprintf(format, args...))
	in.mu.Unlock()
}

// Errors lists protocol violations the endpoint saw.
func (in *Ingestion) Errors() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.parse()
	return append([]string(nil), in.errs...)
}

// Requests is how many requests arrived, whatever their answer.
func (in *Ingestion) Requests() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.requests
}

// Envelopes returns what was accepted so far.
func (in *Ingestion) Envelopes() []Envelope {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.parse()
	return append([]Envelope(nil), in.envelopes...)
}

// Messages returns the accepted trace items whose message is msg.
func (in *Ingestion) Messages(msg string) []Envelope { return in.items("MessageData", msg) }

// RequestItems returns the accepted request items.
func (in *Ingestion) RequestItems() []Envelope { return in.items("RequestData", "") }

// Events returns the accepted custom event items called name.
func (in *Ingestion) Events(name string) []Envelope { return in.items("EventData", name) }

// items returns the accepted items of a base type whose message or name
// is text ("" for any).
func (in *Ingestion) items(baseType, text string) []Envelope {
	var out []Envelope
	for _, e := range in.Envelopes() {
		d := e.Data.BaseData
		if e.Data.BaseType == baseType && (text == "" || text == d.Message || text == d.Name) {
			out = append(out, e)
		}
	}
	return out
}

// Contains reports whether any accepted payload contains s.
func (in *Ingestion) Contains(s string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, req := range in.raw {
		if bytes.Contains(req.body, []byte(s)) {
			return true
		}
	}
	return false
}
