package appinsights_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"

	"github.com/brainwire/brainwire/telemetry/appinsights"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

func TestParseConnectionString(t *testing.T) {
	cases := []struct {
		in, key, endpoint, err string
	}{
		{in: "InstrumentationKey=abc-123;IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/;LiveEndpoint=https://westeurope.livediagnostics.monitor.azure.com/;ApplicationId=x",
			key: "abc-123", endpoint: "https://westeurope-5.in.applicationinsights.azure.com/"},
		{in: " instrumentationkey = abc ; ", key: "abc", endpoint: appinsights.DefaultIngestionEndpoint},
		{in: "InstrumentationKey=abc;EndpointSuffix=applicationinsights.azure.cn", key: "abc", endpoint: "https://dc.applicationinsights.azure.cn"},
		{in: "InstrumentationKey=abc;EndpointSuffix=ai.contoso.com;Location=westus2", key: "abc", endpoint: "https://westus2.dc.ai.contoso.com"},
		{in: "IngestionEndpoint=https://x/", err: "InstrumentationKey is missing"},
		{in: "InstrumentationKey=abc;Authorization=AAD", err: "not supported"},
		{in: "InstrumentationKey=abc;IngestionEndpoint=ftp://x", err: "not an http(s) URL"},
		// TrackURL appends /v2/track: after a query or a fragment it would
		// not be the path the envelopes are posted to.
		{in: "InstrumentationKey=abc;IngestionEndpoint=https://x/?a=b", err: "not an http(s) URL"},
		{in: "InstrumentationKey=abc;IngestionEndpoint=https://x/#", err: "not an http(s) URL"},
		{in: "InstrumentationKey=abc;EndpointSuffix=example.com#x", err: "not an http(s) URL"},
		{in: "InstrumentationKeyabc", err: "not key=value"},
	}
	for _, c := range cases {
		got, err := appinsights.ParseConnectionString(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.InstrumentationKey != c.key || got.IngestionEndpoint != c.endpoint {
			t.Errorf("%q: %+v, %v", c.in, got, err)
		}
	}
	cs := appinsights.ConnectionString{IngestionEndpoint: "https://x.example/"}
	if cs.TrackURL() != "https://x.example/v2/track" {
		t.Errorf("TrackURL %s", cs.TrackURL())
	}
}

func newExporter(t *testing.T, connStr string, cfg appinsights.Config) *appinsights.Exporter {
	t.Helper()
	cs, err := appinsights.ParseConnectionString(connStr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectionString = cs
	e, err := appinsights.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

func shutdown(t *testing.T, e *appinsights.Exporter, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return e.Shutdown(ctx)
}

func TestExporterSendsEnvelopes(t *testing.T) {
	in := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	e := newExporter(t, in.ConnectionString(), appinsights.Config{BatchSize: 7, Tags: map[string]string{"ai.cloud.role": "brainwire"}})
	at := time.Date(2026, 11, 23, 8, 30, 0, 123456789, time.UTC)
	op := appinsights.Operation{ID: "4bf92f3577b34da6a3ce929d0e0e4736", ParentID: "00f067aa0ba902b7", Name: "POST /api/capture"}
	for i := range 20 {
		e.TrackTrace(appinsights.Trace{Time: at, Message: "Reasoning chunk", Severity: contracts.Information, Operation: op,
			Properties: []appinsights.Property{{Key: "chunk_index", Value: fmt.Sprint(i)}}})
	}
	e.TrackRequest(appinsights.Request{Time: at, ID: "00f067aa0ba902b7", Name: "POST /api/capture", Duration: 90*time.Minute + 1500*time.Millisecond,
		ResponseCode: "200", Success: true, Operation: op, Measurements: []appinsights.Measurement{{Key: "confidence", Value: 0.9}}})
	if err := shutdown(t, e, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if errs := in.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	msgs := in.Messages("Reasoning chunk")
	if len(msgs) != 20 {
		t.Fatalf("%d traces received, want 20", len(msgs))
	}
	// The envelopes' shape is TestEnvelopeMatchesContracts'; here, that
	// the configured tags and the items' operations travel.
	if m := msgs[0]; m.Tags["ai.operation.id"] != op.ID || m.Tags["ai.cloud.role"] != "brainwire" {
		t.Errorf("trace envelope %+v", m)
	}
	if reqs := in.RequestItems(); len(reqs) != 1 || reqs[0].Data.BaseData.Measurements["confidence"] != 0.9 {
		t.Errorf("request envelope %+v", reqs)
	}
	if in.Requests() < 3 {
		t.Errorf("%d requests for 21 items in batches of 7", in.Requests())
	}
	st := e.Stats()
	if st.Enqueued != 21 || st.Sent != 21 || st.DroppedQueueFull+st.DroppedSendFailed+st.DroppedShutdown != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestTrackNeverBlocks fills the queue while the endpoint hangs: every
// call returns at once, the overflow is counted, and Shutdown keeps its
// deadline and leaves no goroutine behind.
func TestTrackNeverBlocks(t *testing.T) {
	in := telemetrytest.NewIngestion(t, telemetrytest.IngestHang)
	before := runtime.NumGoroutine()
	cs, _ := appinsights.ParseConnectionString(in.ConnectionString())
	e, err := appinsights.New(appinsights.Config{ConnectionString: cs, QueueSize: 100, BatchSize: 10, SendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint holds every send until the test ends: a Track that
	// waited on a send would never return, and the loop would hang.
	accepted := 0
	for range 10000 {
		if e.TrackTrace(appinsights.Trace{Message: "Reasoning chunk"}) {
			accepted++
		}
	}
	st := e.Stats()
	if st.DroppedQueueFull == 0 || st.Enqueued+st.DroppedQueueFull != 10000 || int(st.Enqueued) != accepted {
		t.Errorf("stats %+v", st)
	}
	start := time.Now()
	err = shutdown(t, e, 300*time.Millisecond)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("shutdown: %v after %s; want a deadline error at once", err, time.Since(start))
	}
	st = e.Stats()
	if st.Enqueued != st.Sent+st.DroppedSendFailed+st.DroppedShutdown {
		t.Errorf("items unaccounted for: %+v", st)
	}
	if e.TrackTrace(appinsights.Trace{}) {
		t.Error("accepted an item after shutdown")
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Errorf("second shutdown: %v", err)
	}
	in.Release()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines before, %d after shutdown", before, n)
	}
}

// TestRetries resends what ingestion refused with a retryable status,
// and drops (and counts) the rest.
func TestRetries(t *testing.T) {
	var calls atomic.Int32
	var lastBatch atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		lines := countLines(t, r)
		lastBatch.Store(int32(lines))
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			// Item 0 may be retried, item 1 may not; the rest went in.
			w.WriteHeader(http.StatusPartialContent)
			fmt.Fprintf(w, `{"itemsReceived":%d,"itemsAccepted":%d,"errors":[{"index":0,"statusCode":500,"message":"busy"},{"index":1,"statusCode":400,"message":"bad"}]}`, lines, lines-2)
		default:
			fmt.Fprintf(w, `{"itemsReceived":%d,"itemsAccepted":%d,"errors":[]}`, lines, lines)
		}
	}))
	defer srv.Close()
	e := newExporter(t, "InstrumentationKey=k;IngestionEndpoint="+srv.URL, appinsights.Config{BatchSize: 5, RetryBackoff: time.Millisecond})
	for range 5 {
		e.TrackTrace(appinsights.Trace{Message: "m"})
	}
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := shutdown(t, e, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if calls.Load() != 3 || lastBatch.Load() != 1 || st.Sent != 4 || st.DroppedSendFailed != 1 || st.SendErrors != 2 {
		t.Errorf("%d calls, last batch %d, stats %+v", calls.Load(), lastBatch.Load(), st)
	}
}

// countLines counts the envelopes of a gzip, newline-delimited body.
func countLines(t *testing.T, r *http.Request) int {
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		t.Error(err)
		return 0
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Error(err)
	}
	return strings.Count(string(b), "\n")
}

// TestSendersSendAtOnce: Config.Senders batches are in flight at once
// while the endpoint is slow to answer, and no more, without waiting for
// the flush interval; every item is sent once it answers.
func TestSendersSendAtOnce(t *testing.T) {
	for _, senders := range []int{1, 4} {
		t.Run(fmt.Sprint(senders), func(t *testing.T) {
			in := telemetrytest.NewIngestion(t, telemetrytest.IngestHang)
			defer in.Release() // a failed check leaves nothing hanging
			e := newExporter(t, in.ConnectionString(), appinsights.Config{BatchSize: 10, QueueSize: 1000, Senders: senders,
				SendTimeout: time.Minute, FlushInterval: time.Hour})
			for range 100 {
				e.TrackTrace(appinsights.Trace{Message: "Reasoning chunk"})
			}
			deadline := time.Now().Add(3 * time.Second)
			for in.Requests() < senders && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // a sender too many would have sent by now
			if n := in.Requests(); n != senders {
				t.Fatalf("%d requests in flight, want %d", n, senders)
			}
			in.SetMode(telemetrytest.IngestOK)
			in.Release()
			if err := shutdown(t, e, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if st := e.Stats(); st.Sent != 100 || st.Enqueued != 100 {
				t.Errorf("stats %+v, want all 100 sent", st)
			}
			if got := len(in.Messages("Reasoning chunk")); got != 100-10*senders {
				t.Errorf("%d items parsed after the release, want %d", got, 100-10*senders)
			}
		})
	}
}
