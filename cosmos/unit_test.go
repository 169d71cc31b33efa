package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/brainwire/brainwire"
)

// keysOf returns the sorted keys of v marshalled to a JSON object, and of
// its classificationMeta object.
func keysOf(t *testing.T, v any) (top, meta []string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		top = append(top, k)
	}
	var mm map[string]json.RawMessage
	if err := json.Unmarshal(m["classificationMeta"], &mm); err != nil {
		t.Fatal(err)
	}
	for k := range mm {
		meta = append(meta, k)
	}
	sort.Strings(top)
	sort.Strings(meta)
	return top, meta
}

// TestDocumentsMirrorDomain holds the stored documents to the JSON names of
// the brainwire types.
func TestDocumentsMirrorDomain(t *testing.T) {
	now := time.Now()
	c := &brainwire.Classification{
		Bucket: "People", Confidence: 1, AllScores: map[string]float64{"People": 1},
		ClassifiedBy: "x", AgentChain: []string{"x"}, ClassifiedAt: now,
	}
	it := brainwire.InboxItem{ID: "i", UserID: "u", RawText: "r", Title: "t", Source: brainwire.KindVoice,
		Status: "pending", ClassificationMeta: c, FiledRecordID: "f", UpstreamThreadID: "th", CreatedAt: now, UpdatedAt: now,
		AgentRun: &brainwire.AgentRun{RunID: "run", AgentVersion: "v", Outcome: brainwire.OutcomeLowConfidence, Bucket: "People", Confidence: 0.5, TraceID: "t", SpanID: "s"}}
	rec := brainwire.BucketRecord{ID: "r", UserID: "u", Bucket: "People", RawText: "r", Title: "t",
		ClassificationMeta: c, InboxRecordID: "i", CreatedAt: now}

	wantTop, wantMeta := keysOf(t, it)
	gotTop, gotMeta := keysOf(t, toInboxDoc(it))
	if !slices.Equal(gotTop, wantTop) || !slices.Equal(gotMeta, wantMeta) {
		t.Errorf("Inbox document keys %v %v, want %v %v", gotTop, gotMeta, wantTop, wantMeta)
	}
	wantTop, wantMeta = keysOf(t, rec)
	gotTop, gotMeta = keysOf(t, toBucketDoc(rec))
	if !slices.Equal(gotTop, wantTop) || !slices.Equal(gotMeta, wantMeta) {
		t.Errorf("bucket document keys %v %v, want %v %v", gotTop, gotMeta, wantTop, wantMeta)
	}
	if back := toInboxDoc(it).item(); !back.CreatedAt.Equal(now) || back.ClassificationMeta.Bucket != "People" || back.Source != brainwire.KindVoice ||
		back.AgentRun == nil || *back.AgentRun != *it.AgentRun || back.AgentRun == it.AgentRun {
		t.Errorf("round trip = %+v", back)
	}
	if back := toBucketDoc(rec).record("People"); back.Bucket != "People" || back.InboxRecordID != "i" {
		t.Errorf("round trip = %+v", back)
	}
}

// TestStampOrder checks that stored times sort as strings in time order.
func TestStampOrder(t *testing.T) {
	base := time.Date(2024, 5, 1, 12, 0, 5, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(time.Nanosecond),
		base.Add(100 * time.Millisecond),
		base.Add(-100 * time.Millisecond).In(time.FixedZone("EET", 2*3600)),
		base.Add(time.Second).In(time.FixedZone("PST", -8*3600)),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	var strs []string
	for _, tm := range times {
		b, err := json.Marshal(stamp(tm))
		if err != nil {
			t.Fatal(err)
		}
		var back stamp
		if err := json.Unmarshal(b, &back); err != nil || !time.Time(back).Equal(tm) {
			t.Errorf("%s read back as %v, %v", b, time.Time(back), err)
		}
		strs = append(strs, string(b))
	}
	byTime := slices.Clone(times)
	slices.SortFunc(byTime, func(a, b time.Time) int { return a.Compare(b) })
	byString := slices.Clone(times)
	sort.Slice(byString, func(i, j int) bool {
		return stamp(byString[i]).String() < stamp(byString[j]).String()
	})
	for i := range byTime {
		if !byTime[i].Equal(byString[i]) {
			t.Fatalf("string order differs from time order at %d: %v", i, strs)
		}
	}
	// What the domain types' own JSON would read back too.
	var s stamp
	if err := json.Unmarshal([]byte(`"2024-05-01T14:00:05.1+02:00"`), &s); err != nil || !time.Time(s).Equal(base.Add(100*time.Millisecond)) {
		t.Errorf("RFC 3339 with offset read as %v, %v", time.Time(s), err)
	}
}

func TestOpenConfig(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]Config{
		"no endpoint":   {Key: emulatorKey},
		"no credential": {Endpoint: "https://example.documents.azure.com:443/"},
		"bad key":       {Endpoint: "https://example.documents.azure.com:443/", Key: "not base64!"},
	} {
		if _, err := Open(ctx, cfg); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
	s, err := Open(ctx, Config{Endpoint: "https://example.documents.azure.com:443/", Credential: &fakeCredential{}})
	if err != nil {
		t.Fatalf("Open with a token credential: %v", err)
	}
	if s.Database() != DefaultDatabase {
		t.Errorf("database = %q, want %q", s.Database(), DefaultDatabase)
	}
}

func TestOpErr(t *testing.T) {
	for status, code := range map[int]string{
		http.StatusNotFound:              brainwire.ENotFound,
		http.StatusConflict:              brainwire.EConflict,
		http.StatusPreconditionFailed:    brainwire.EConflict,
		http.StatusRequestEntityTooLarge: brainwire.ETooLarge,
		http.StatusBadRequest:            brainwire.EInvalid,
		http.StatusTooManyRequests:       brainwire.EUnavailable,
		http.StatusServiceUnavailable:    brainwire.EUnavailable,
		http.StatusForbidden:             brainwire.EUnavailable,
		http.StatusMethodNotAllowed:      brainwire.EInternal,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://x/dbs/d/colls/Inbox/docs/1", nil)
		resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(`{"code":"Some","message":"m"}`)), Request: req}
		cause := runtime.NewResponseError(resp)
		err := opErr("reading inbox item 1", "inbox item", cause)
		if got := brainwire.ErrorCode(err); got != code {
			t.Errorf("%d: code %q, want %q", status, got, code)
		}
		if !errors.Is(err, cause) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%d: error %q should wrap the cause and be one line", status, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(status)) {
			t.Errorf("%d: error %q lacks the status", status, err)
		}
	}
	if got := brainwire.ErrorCode(opErr("x", "y", errors.New("dial tcp: connection refused"))); got != brainwire.EUnavailable {
		t.Errorf("network error: code %q", got)
	}
	if err := opErr("x", "y", context.Canceled); !errors.Is(err, context.Canceled) || brainwire.ErrorCode(err) != brainwire.EInternal {
		t.Errorf("cancelled: %v code %q", err, brainwire.ErrorCode(err))
	}
}
