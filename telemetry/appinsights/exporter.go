package appinsights

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"
)

// Defaults for the zero fields of Config (none may be negative). A queue four times as large
// lost fewer chunk items under bursts of 5,000 to 10,000 captures on a
// busy 2-vCPU machine, but held about 20 MB more at 1,000 captures,
// where this one loses none (bench/RESULTS.md).
const (
	DefaultQueueSize     = 16384
	DefaultBatchSize     = 512
	DefaultFlushInterval = 5 * time.Second
	DefaultSendTimeout   = 10 * time.Second
	DefaultRetryBackoff  = time.Second
	DefaultSenders       = 4
)

// A batch is resent at most maxRetries times; send failures are logged at
// most once per logEvery.
const (
	maxRetries = 2
	logEvery   = 30 * time.Second
)

// Config configures an Exporter.
type Config struct {
	ConnectionString ConnectionString
	// QueueSize bounds the items waiting to be sent; beyond it new items
	// are dropped and counted, never waited for.
	QueueSize int
	// BatchSize is the most envelopes sent in one request.
	BatchSize int
	// FlushInterval is the longest an item waits for its batch to fill.
	FlushInterval time.Duration
	// SendTimeout bounds one ingestion request, so a hanging endpoint
	// holds up only the exporter's own goroutines, and only that long.
	SendTimeout time.Duration
	// Senders is how many batches are encoded and sent at once. One at a
	// time could not keep up with thousands of captures streaming on a
	// busy machine: each request waits for its answer, and the queue
	// overflowed.
	Senders int
	// RetryBackoff is the pause before a batch is resent after a
	// retryable answer (408, 429, 439, 500, 503, network errors), doubled
	// for the second of at most maxRetries.
	RetryBackoff time.Duration
	// Tags are added to every envelope (ai.cloud.role, ...).
	Tags map[string]string
	// Logger receives send failures, at most one line per logEvery.
	Logger *slog.Logger
}

// Operation correlates an item with a distributed trace: ID is the trace
// id, ParentID the span the item belongs to, Name the root operation.
type Operation struct {
	ID       string
	ParentID string
	Name     string
}

// Property is one custom property.
type Property struct{ Key, Value string }

// Measurement is one custom measurement.
type Measurement struct {
	Key   string
	Value float64
}

// Trace is a trace telemetry item (a log message). Its custom properties
// are Common and Properties together: Common can be shared, unchanged, by
// many items (a capture's ids), so that each item carries only its own.
type Trace struct {
	Time       time.Time
	Message    string
	Severity   contracts.SeverityLevel
	Operation  Operation
	Common     []Property
	Properties []Property
}

// Request is a request telemetry item: one operation the service handled.
type Request struct {
	Time         time.Time // when it started
	ID           string    // the operation's own id (a span id)
	Name         string
	Duration     time.Duration
	ResponseCode string
	Success      bool
	URL          string
	Operation    Operation
	Properties   []Property
	Measurements []Measurement
}

// Event is a custom event telemetry item (customEvents): something that
// happened, with its own name.
type Event struct {
	Time         time.Time
	Name         string
	Operation    Operation
	Properties   []Property
	Measurements []Measurement
}

// item is what the queue holds; envelopes are built off the hot path.
type item struct {
	trace Trace
	req   *Request
	event *Event
}

// Stats counts what became of the items given to an Exporter.
type Stats struct {
	Enqueued int64
	Sent     int64
	// Dropped items, by reason.
	DroppedQueueFull  int64 // the queue was full
	DroppedSendFailed int64 // the endpoint refused them or retries ran out
	DroppedShutdown   int64 // still queued when Shutdown's deadline passed
	SendErrors        int64 // failed requests, retried or not
}

// Exporter sends telemetry items to Application Insights ingestion as
// gzip-compressed, newline-delimited JSON envelopes posted to
// <IngestionEndpoint>/v2/track, the wire format of the
// ApplicationInsights-Go channel. The envelopes are that library's
// contracts types (names, base types, field limits), written as
// json.Marshal writes them.
//
// Unlike that library's channel, whose Track blocks on an unbuffered
// channel and whose retry goroutines sleep through Close, TrackTrace and
// TrackRequest never block: items go to a bounded queue drained by
// Config.Senders goroutines, and what does not fit is dropped and counted.
// Shutdown flushes within its context's deadline and leaves no goroutine
// behind.
type Exporter struct {
	cfg       Config
	url       string
	names     envelopeNames
	tags      []Property // Config.Tags, in a fixed order
	client    *http.Client
	transport *http.Transport

	queue   chan item
	kick    chan struct{} // a batch is ready
	closed  atomic.Bool
	stop    chan struct{} // closed when Shutdown starts
	stopped sync.Once
	done    chan struct{} // closed when every sender has returned
	ctx     context.Context
	abort   context.CancelFunc // cancels in-flight requests

	enqueued, sent, dropFull, dropFailed, dropShutdown, sendErrors atomic.Int64

	logMu    sync.Mutex
	lastLog  time.Time
	unlogged int64
}

// encoder is one sender's buffers.
type encoder struct {
	gz   *gzip.Writer
	buf  bytes.Buffer
	line []byte
}

// New starts an Exporter.
func New(cfg Config) (*Exporter, error) {
	if cfg.ConnectionString.InstrumentationKey == "" {
		return nil, errors.New("appinsights: an instrumentation key is required")
	}
	cfg.ConnectionString.IngestionEndpoint = cmp.Or(cfg.ConnectionString.IngestionEndpoint, DefaultIngestionEndpoint)
	cfg.QueueSize = cmp.Or(cfg.QueueSize, DefaultQueueSize)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.FlushInterval = cmp.Or(cfg.FlushInterval, DefaultFlushInterval)
	cfg.SendTimeout = cmp.Or(cfg.SendTimeout, DefaultSendTimeout)
	cfg.RetryBackoff = cmp.Or(cfg.RetryBackoff, DefaultRetryBackoff)
	cfg.Senders = cmp.Or(cfg.Senders, DefaultSenders)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	e := &Exporter{
		cfg:   cfg,
		url:   cfg.ConnectionString.TrackURL(),
		names: newEnvelopeNames(strings.ReplaceAll(cfg.ConnectionString.InstrumentationKey, "-", "")),
		queue: make(chan item, cfg.QueueSize),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = cfg.SendTimeout
	t.MaxIdleConnsPerHost = cfg.Senders
	e.transport = t
	e.client = &http.Client{Transport: t}
	for k, v := range cfg.Tags {
		e.tags = append(e.tags, Property{Key: k, Value: v})
	}
	slices.SortFunc(e.tags, func(a, b Property) int { return strings.Compare(a.Key, b.Key) })
	e.ctx, e.abort = context.WithCancel(context.Background())
	var senders sync.WaitGroup
	for range cfg.Senders {
		senders.Go(e.run)
	}
	go func() {
		senders.Wait()
		close(e.done)
	}()
	return e, nil
}

// TrackTrace queues a trace item. It never blocks; it reports false when
// the item was dropped (queue full or exporter shut down).
func (e *Exporter) TrackTrace(t Trace) bool {
	return e.enqueue(item{trace: t})
}

// TrackRequest queues a request item, like TrackTrace.
func (e *Exporter) TrackRequest(r Request) bool {
	return e.enqueue(item{req: &r})
}

// TrackEvent queues a custom event item, like TrackTrace.
func (e *Exporter) TrackEvent(ev Event) bool {
	return e.enqueue(item{event: &ev})
}

func (e *Exporter) enqueue(it item) bool {
	if e.closed.Load() {
		e.dropShutdown.Add(1)
		return false
	}
	select {
	case e.queue <- it:
		e.enqueued.Add(1)
		// A sender is woken once per batch, not per item: a handoff
		// to a waiting goroutine costs more than the enqueue itself.
		e.wakeIfBatch()
		return true
	default:
		e.dropFull.Add(1)
		return false
	}
}

// wakeIfBatch wakes a waiting sender when a batch's worth is queued.
func (e *Exporter) wakeIfBatch() {
	if len(e.queue) >= e.cfg.BatchSize {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// Stats returns the counters so far.
func (e *Exporter) Stats() Stats {
	return Stats{
		Enqueued:          e.enqueued.Load(),
		Sent:              e.sent.Load(),
		DroppedQueueFull:  e.dropFull.Load(),
		DroppedSendFailed: e.dropFailed.Load(),
		DroppedShutdown:   e.dropShutdown.Load(),
		SendErrors:        e.sendErrors.Load(),
	}
}

// QueueLen is how many items wait to be sent.
func (e *Exporter) QueueLen() int { return len(e.queue) }

// Shutdown stops accepting items and sends what is queued, without
// retries, until ctx ends; then it abandons in-flight requests. Items not
// sent by then are counted as dropped. It returns when the exporter's
// goroutines have exited; later calls return at once.
func (e *Exporter) Shutdown(ctx context.Context) error {
	first := false
	e.stopped.Do(func() {
		first = true
		e.closed.Store(true)
		close(e.stop)
	})
	if !first {
		<-e.done
		return nil
	}
	var err error
	select {
	case <-e.done:
	case <-ctx.Done():
		err = ctx.Err()
		e.abort()
		<-e.done
	}
	e.abort()
	// Items that raced with the closed flag; every sender has returned.
	for len(e.queue) > 0 {
		<-e.queue
		e.dropShutdown.Add(1)
	}
	e.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("appinsights: shutdown: %w", err)
	}
	return nil
}

// run is one sender. Each takes batches from the queue until it is empty,
// then waits for a full batch (enqueue kicks), the flush interval or
// Shutdown; while some wait on their requests' answers the others go on
// draining the queue.
func (e *Exporter) run() {
	// Grown as batches need: every sender has one, and a configured
	// batch may be far larger than what is ever queued.
	batch := make([]item, 0, min(e.cfg.BatchSize, DefaultBatchSize))
	// Fastest compression: ingestion only needs gzip, and the CPU is
	// shared with the captures.
	enc := &encoder{}
	enc.gz, _ = gzip.NewWriterLevel(&enc.buf, gzip.BestSpeed)
	tick := time.NewTicker(e.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-e.kick:
		case <-e.stop:
			e.flush(enc, batch)
			return
		}
		e.flush(enc, batch)
	}
}

// flush sends everything queued, in batches, until the queue is empty;
// after Shutdown's deadline it only counts what is left as dropped.
func (e *Exporter) flush(enc *encoder, batch []item) {
	for {
		batch = batch[:0]
	fill:
		for len(batch) < e.cfg.BatchSize {
			select {
			case it := <-e.queue:
				batch = append(batch, it)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			return
		}
		// More than this sender's batch may wait: enqueue's kick woke
		// only this one.
		e.wakeIfBatch()
		if e.ctx.Err() != nil {
			e.dropShutdown.Add(int64(len(batch)))
		} else {
			e.send(enc, batch)
		}
		clear(batch) // let sent items' strings go
	}
}

// send posts one batch, resending what the endpoint says may be resent
// after a pause, unless Shutdown has begun.
func (e *Exporter) send(enc *encoder, batch []item) {
	items := batch
	for attempt := 0; ; attempt++ {
		retry, err := e.post(enc, items)
		if err == nil {
			return
		}
		e.sendErrors.Add(1)
		if len(retry) > 0 && attempt < maxRetries && e.pause(e.cfg.RetryBackoff<<attempt) {
			items = retry
			continue
		}
		e.dropFailed.Add(int64(len(retry)))
		e.logFailure(err, len(retry))
		return
	}
}

// pause sleeps for d unless Shutdown has begun or begins first; it
// reports whether the whole pause passed.
func (e *Exporter) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.stop:
		return false
	default:
	}
	select {
	case <-t.C:
		return e.ctx.Err() == nil
	case <-e.stop:
		return false
	}
}

// Status codes after which ingestion may accept a resend.
func retryable(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 439,
		http.StatusInternalServerError, http.StatusServiceUnavailable:
		return true
	}
	return false
}

type trackResponse struct {
	ItemsReceived int `json:"itemsReceived"`
	ItemsAccepted int `json:"itemsAccepted"`
	Errors        []struct {
		Index      int    `json:"index"`
		StatusCode int    `json:"statusCode"`
		Message    string `json:"message"`
	} `json:"errors"`
}

// post sends items once. On failure it returns the items worth resending
// (the rest are counted as dropped here).
func (e *Exporter) post(enc *encoder, envs []item) (retry []item, err error) {
	body, err := e.encode(enc, envs)
	if err != nil {
		e.dropFailed.Add(int64(len(envs)))
		return nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.SendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		e.dropFailed.Add(int64(len(envs)))
		return nil, fmt.Errorf("appinsights: building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-json-stream")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := e.client.Do(req)
	if err != nil {
		return envs, fmt.Errorf("appinsights: posting %d items: %w", len(envs), err)
	}
	defer resp.Body.Close()
	var tr trackResponse
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = json.Unmarshal(raw, &tr)
	switch {
	case resp.StatusCode == http.StatusOK:
		e.sent.Add(int64(len(envs)))
		return nil, nil
	case resp.StatusCode == http.StatusPartialContent:
		failed := map[int]bool{}
		for _, ie := range tr.Errors {
			if ie.Index < 0 || ie.Index >= len(envs) || failed[ie.Index] {
				continue
			}
			failed[ie.Index] = true
			if retryable(ie.StatusCode) {
				retry = append(retry, envs[ie.Index])
			} else {
				e.dropFailed.Add(1)
			}
		}
		e.sent.Add(int64(len(envs) - len(failed)))
		if len(failed) == 0 {
			return nil, nil
		}
		return retry, fmt.Errorf("appinsights: %d of %d items refused", len(failed), len(envs))
	case retryable(resp.StatusCode):
		return envs, fmt.Errorf("appinsights: ingestion answered %s", resp.Status)
	default:
		e.dropFailed.Add(int64(len(envs)))
		return nil, fmt.Errorf("appinsights: ingestion answered %s: %s", resp.Status, strings.TrimSpace(string(raw[:min(len(raw), 512)])))
	}
}

// encode writes items as gzip-compressed JSON lines.
func (e *Exporter) encode(enc *encoder, items []item) ([]byte, error) {
	enc.buf.Reset()
	enc.gz.Reset(&enc.buf)
	for i := range items {
		enc.line = e.appendEnvelope(enc.line[:0], &items[i])
		if _, err := enc.gz.Write(enc.line); err != nil {
			return nil, fmt.Errorf("appinsights: compressing: %w", err)
		}
	}
	if err := enc.gz.Close(); err != nil {
		return nil, fmt.Errorf("appinsights: compressing: %w", err)
	}
	return bytes.Clone(enc.buf.Bytes()), nil
}

func (e *Exporter) logFailure(err error, dropped int) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	e.unlogged += int64(dropped)
	if time.Since(e.lastLog) < logEvery {
		return
	}
	e.cfg.Logger.Warn("Application Insights: sending telemetry failed; items dropped",
		"error", err, "dropped_since_last_report", e.unlogged, "endpoint", e.cfg.ConnectionString.IngestionEndpoint)
	e.lastLog, e.unlogged = time.Now(), 0
}

// formatDuration renders d as ingestion expects: d.hh:mm:ss.fffffff.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	ticks := int64(d/100) % 10_000_000
	secs := int64(d/time.Second) % 60
	mins := int64(d/time.Minute) % 60
	hours := int64(d/time.Hour) % 24
	days := int64(d / (24 * time.Hour))
	return fmt.Sprintf("%d.%02d:%02d:%02d.%07d", days, hours, mins, secs, ticks)
}
