package appinsights

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"
)

// reference builds the envelope of it with the contracts types, as the
// ApplicationInsights-Go client does, for json.Marshal.
func reference(e *Exporter, it *item) *contracts.Envelope {
	env := contracts.NewEnvelope()
	env.IKey = e.cfg.ConnectionString.InstrumentationKey
	tags := contracts.ContextTags{}
	for k, v := range e.cfg.Tags {
		tags[k] = v
	}
	data := contracts.NewData()
	var op Operation
	var ts time.Time
	props := func(lists ...[]Property) map[string]string {
		m := map[string]string{}
		for _, l := range lists {
			for _, p := range l {
				m[p.Key] = p.Value
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	measurements := func(ms []Measurement) map[string]float64 {
		if len(ms) == 0 {
			return nil
		}
		m := map[string]float64{}
		for _, x := range ms {
			m[x.Key] = x.Value
		}
		return m
	}
	if r := it.req; r != nil {
		op, ts = r.Operation, r.Time
		d := contracts.NewRequestData()
		d.Id, d.Name, d.Url, d.Duration, d.ResponseCode, d.Success = r.ID, r.Name, r.URL, formatDuration(r.Duration), r.ResponseCode, r.Success
		d.Properties, d.Measurements = props(r.Properties), measurements(r.Measurements)
		d.Sanitize()
		env.Name, data.BaseType, data.BaseData = d.EnvelopeName(strings.ReplaceAll(env.IKey, "-", "")), d.BaseType(), d
	} else if ev := it.event; ev != nil {
		op, ts = ev.Operation, ev.Time
		d := contracts.NewEventData()
		d.Name, d.Properties, d.Measurements = ev.Name, props(ev.Properties), measurements(ev.Measurements)
		d.Sanitize()
		env.Name, data.BaseType, data.BaseData = d.EnvelopeName(strings.ReplaceAll(env.IKey, "-", "")), d.BaseType(), d
	} else {
		t := it.trace
		op, ts = t.Operation, t.Time
		d := contracts.NewMessageData()
		d.Message, d.SeverityLevel, d.Properties = t.Message, t.Severity, props(t.Common, t.Properties)
		d.Sanitize()
		env.Name, data.BaseType, data.BaseData = d.EnvelopeName(strings.ReplaceAll(env.IKey, "-", "")), d.BaseType(), d
	}
	tags.Operation().SetId(op.ID)
	tags.Operation().SetParentId(op.ParentID)
	tags.Operation().SetName(op.Name)
	env.Tags, env.Data = tags, data
	env.Time = ts.UTC().Format("2006-01-02T15:04:05.999999Z")
	return env
}

func TestEnvelopeMatchesContracts(t *testing.T) {
	e := &Exporter{cfg: Config{
		ConnectionString: ConnectionString{InstrumentationKey: "0000-1111"},
		Tags:             map[string]string{"ai.cloud.role": "brainwire", "ai.cloud.roleInstance": "host-1"},
	}}
	e.names = newEnvelopeNames("00001111")
	e.tags = []Property{{"ai.cloud.role", "brainwire"}, {"ai.cloud.roleInstance", "host-1"}}
	at := time.Date(2026, 11, 23, 8, 30, 0, 123456789, time.FixedZone("x", 3600))
	op := Operation{ID: "4bf92f3577b34da6a3ce929d0e0e4736", ParentID: "00f067aa0ba902b7", Name: "POST /api/capture"}
	awkward := "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07 <html> & é 日本 \u2028 bad \xff end"
	long := strings.Repeat("é", 5000) // 10,000 bytes: cut at 8,192 on a character boundary
	items := []item{
		{trace: Trace{Time: at, Message: "Reasoning chunk", Severity: contracts.Information, Operation: op,
			Common:     []Property{{"run_id", "run-1"}, {"chunk_index", "stale"}},
			Properties: []Property{{"chunk_index", "7"}, {"reasoning_text", awkward}, {"long", long}}}},
		{trace: Trace{Time: at, Message: awkward, Severity: contracts.Warning}},
		{req: &Request{Time: at, ID: "00f067aa0ba902b7", Name: "POST /api/capture", Duration: 1234567891 * time.Nanosecond,
			ResponseCode: "200", Success: true, Operation: op, Properties: []Property{{"outcome", "classified"}},
			Measurements: []Measurement{{"confidence", 0.95}, {"reasoning_chunks", 303}, {"tiny", 1e-9}}}},
		{req: &Request{Time: at, Name: "x", ResponseCode: "upstream"}},
		{event: &Event{Time: at, Name: "gen_ai.evaluation.result", Operation: op,
			Properties:   []Property{{"gen_ai.evaluation.name", "human_bucket"}, {"gen_ai.evaluation.explanation", "People -> " + awkward}},
			Measurements: []Measurement{{"gen_ai.evaluation.score.value", 0}}}},
		{event: &Event{Time: at, Name: strings.Repeat("n", 600)}},
	}
	for i := range items {
		got := e.appendEnvelope(nil, &items[i])
		if !strings.HasSuffix(string(got), "}\n") || strings.Count(string(got), "\n") != 1 {
			t.Fatalf("item %d: not one line: %q", i, got)
		}
		want, err := json.Marshal(reference(e, &items[i]))
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("item %d: invalid JSON %v: %s", i, err, got)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("item %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
