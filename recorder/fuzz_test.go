package recorder_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/recorder"
)

// FuzzUnmarshal reads any file as a fixture. It must be an error or a
// fixture, never a panic or a hang; a fixture's accessors must work on
// whatever it holds; and what Marshal writes of it must read back and
// write again the same (the first write may normalize, e.g. compact a
// hand-indented event data), with every event's data intact when it was
// already in the form Marshal keeps.
func FuzzUnmarshal(f *testing.F) {
	for _, b := range fuzztest.SmallFixtures(f) {
		f.Add(b)
	}
	for _, b := range fuzztest.FixtureFiles(f) {
		if len(b) < 16<<10 {
			f.Add(b)
		}
	}
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"version":2}`, `{"version":"1"}`, `{"version":1}`,
		`{"version":1,"capture":{"kind":"text","txet":"typo"}}`,
		`{"version":1,"recorded_at":"10000-01-01T00:00:00Z"}`,
		`{"version":1,"recorded_at":"2025-01-01T00:00:00+23:59"}`,
		`{"version":1,"exchanges":[{"request":{"body":{ "a" : [ 1 , 2 ] }},"response":{"status":200,"split_at":[-1,99999,0],` +
			`"events":[{"ms":-5,"event":"x","data":{ "spaced" : true }},{"data_base64":"!!"},{"data_text":"a\nb"}],"partial_base64":"%%%"}}]}`,
		`{"version":1,"exchanges":[{"response":null},{"error":"reset"}],"tools":[{"arguments":[],"output":"s"}]}`,
		`{"version":1,"version":1,"name":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		defer fuzztest.Deadline(10 * time.Second)()
		fx, err := recorder.Unmarshal(file)
		if err != nil {
			return
		}
		for _, ex := range fx.Exchanges {
			ex.Request.BodyBytes()
			if rs := ex.Response; rs != nil {
				rs.IsStream()
				rs.BodyBytes()
				rs.PartialBytes()
				for _, ev := range rs.Events {
					ev.AppendWire(nil)
				}
			}
		}
		out, err := recorder.Marshal(fx)
		if err != nil {
			return // e.g. a time Marshal cannot write; an error, not a panic
		}
		back, err := recorder.Unmarshal(out)
		if err != nil {
			t.Fatalf("Marshal wrote what Unmarshal rejects: %v\n%s", err, out)
		}
		again, err := recorder.Marshal(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("writing the fixture again changed it (%v):\nfirst  %s\nsecond %s", err, out, again)
		}
		if len(back.Exchanges) != len(fx.Exchanges) {
			t.Fatalf("%d exchanges, read back %d", len(fx.Exchanges), len(back.Exchanges))
		}
		for i, ex := range fx.Exchanges {
			if ex.Response == nil {
				continue
			}
			evs := back.Exchanges[i].Response.Events
			if len(evs) != len(ex.Response.Events) {
				t.Fatalf("exchange %d: %d events, read back %d", i, len(ex.Response.Events), len(evs))
			}
			for j, ev := range ex.Response.Events {
				if !compactOrAbsent(ev.Data) {
					continue
				}
				if got, want := evs[j].Payload(), ev.Payload(); !bytes.Equal(got, want) {
					t.Fatalf("exchange %d event %d: data %q read back as %q", i, j, want, got)
				}
			}
		}
	})
}

// compactOrAbsent reports whether data is empty or already compact JSON,
// which Marshal keeps byte for byte.
func compactOrAbsent(data json.RawMessage) bool {
	if len(data) == 0 {
		return true
	}
	var c bytes.Buffer
	return json.Compact(&c, data) == nil && bytes.Equal(c.Bytes(), data)
}
