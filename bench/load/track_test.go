package load_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"

	"github.com/brainwire/brainwire/bench/load"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// TestSinkCountsAppInsightsItems: the sink counts what the server's own
// Application Insights exporter sends, by kind, and refuses a batch it
// cannot read.
func TestSinkCountsAppInsightsItems(t *testing.T) {
	sink := load.NewSink()
	srv := httptest.NewServer(sink.TrackHandler())
	defer srv.Close()
	cs, err := appinsights.ParseConnectionString("InstrumentationKey=00000000-0000-0000-0000-000000000001;IngestionEndpoint=" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := appinsights.New(appinsights.Config{ConnectionString: cs, BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	const chunks = 300
	for i := range chunks {
		exp.TrackTrace(appinsights.Trace{Time: time.Now(), Message: telemetry.ReasoningChunkMessage, Severity: contracts.Information,
			Properties: []appinsights.Property{{Key: "reasoning_text", Value: strings.Repeat("x", i)}}})
	}
	// Content that spells a chunk's message is not a chunk.
	exp.TrackTrace(appinsights.Trace{Time: time.Now(), Message: "something else", Severity: contracts.Warning,
		Properties: []appinsights.Property{{Key: "text", Value: `"message":"Reasoning chunk"`}}})
	exp.TrackRequest(appinsights.Request{Time: time.Now(), ID: "0123456789abcdef", Name: "POST /api/capture", Duration: time.Second, ResponseCode: "200", Success: true})
	exp.TrackEvent(appinsights.Event{Time: time.Now(), Name: "gen_ai.evaluation.result"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := exp.Stats(); st.Sent != chunks+3 {
		t.Fatalf("the exporter sent %d items, want %d (%+v)", st.Sent, chunks+3, st)
	}
	st := sink.Stats()
	if st.AIItems != chunks+3 || st.AIChunkItems != chunks || st.AIRequestItems != 1 || st.AIMalformed != 0 || st.AIRequests < chunks/64 || st.AIBytes == 0 {
		t.Errorf("sink counted %+v, want %d items, %d chunk traces, 1 request", st, chunks+3, chunks)
	}

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v2/track", strings.NewReader("not gzip"))
	req.Header.Set("Content-Encoding", "gzip")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusBadRequest || sink.Stats().AIMalformed != 1 {
		t.Errorf("a batch that is not gzip: status %d, %d malformed", resp2.StatusCode, sink.Stats().AIMalformed)
	}
}
