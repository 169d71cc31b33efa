package foundry

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/internal/recordings"
)

// referenceTexts is what encoding/json makes of a delta payload: ok is
// false when it rejects the document.
func referenceTexts(data []byte) (texts []string, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers out of float64 range are still valid JSON
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	top, _ := v.(map[string]any)
	delta, _ := top["delta"].(map[string]any)
	content, _ := delta["content"].([]any)
	for _, part := range content {
		p, _ := part.(map[string]any)
		text, _ := p["text"].(map[string]any)
		if s, ok := text["value"].(string); ok {
			texts = append(texts, s)
		}
	}
	return texts, true
}

func checkAgainstReference(t *testing.T, data []byte) {
	t.Helper()
	want, wantOK := referenceTexts(data)
	got, _, err := deltaTexts(data, nil, nil)
	if (err == nil) != wantOK {
		t.Fatalf("%q: scanner error %v, encoding/json accepts: %v", data, err, wantOK)
	}
	if wantOK && !slices.Equal(got, want) {
		t.Fatalf("%q:\n got  %q\n want %q", data, got, want)
	}
}

var deltaSeeds = []string{
	`{"id":"msg_01","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"The","annotations":[]}}]}}`,
	`{"id":"msg_01","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":" 25\uFFFDC\n\n- Date"}}]}}`,
	`{"delta":{"content":[{"text":{"value":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20AC\ud83d\ude00"}}]}}`,
	`{"delta":{"content":[{"text":{"value":"lone \ud83d then \ude00 and \ud83d\u0041"}}]}}`,
	`{"delta":{"content":[{"text":{"value":"one"}},{"type":"image_file","image_file":{"file_id":"f"}},{"text":{"value":"two"}}]}}`,
	`{"delta":{"content":[{"text":{"value":""}}]}}`,
	`{"text":{"value":"not here"},"delta":{"role":"assistant"}}`,
	`{"delta":{"content":[{"text":{"value":"first"}}]},"delta":{}}`,
	`{"delta":{"content":[{"text":{"value":"a"},"text":{"value":"b"}}]}}`,
	`{"delta":{"content":[{"text":{"value":"a","value":null}}]}}`,
	`{"d\u0065lta":{"content":[{"text":{"v\u0061lue":"escaped keys"}}]}}`,
	`{"Delta":{"content":[{"text":{"value":"case matters"}}]}}`,
	` { "delta" : { "content" : [ { "text" : { "value" : "spaced" } } ] } } ` + "\n",
	`{"a":[1,-2.5e+10,0,1E-3,true,false,null,{"b":[[]]},"s"],"delta":{"content":[]}}`,
	`{"delta":{"content":{"text":{"value":"not an array"}}}}`,
	`{"delta":{"content":[1,"x",null,[{"text":{"value":"nested too deep"}}]]}}`,
	`{"delta":{"content":[{"text":"plain"}]}}`,
	`{"delta":{"content":[{"text":{"value":12}}]}}`,
	`[]`, `"x"`, `null`, `0`, `{}`,
	// Near the service's layout, which has its own fast path.
	`{"id":"m\u0031","object":"thread.message.delta","delta":{"content":[{"index":-0.5e3,"type":"text","text":{"value":"x\ty","annotations":[]}}]}}` + " \r\n",
	`{"id":"m","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"x"}}]}}}`,
	`{"id":"m","object":"thread.message.delta","delta":{"content":[{"index":01,"type":"text","text":{"value":"x"}}]}}`,
	`{"id":"m","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"x"},"text":{"value":"y"}}]}}`,
	`{"id":"m","object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"x","annotations":[]}}]}}`,
	`{"id":5,"object":"thread.message.delta","delta":{"content":[{"index":0,"type":"text","text":{"value":"x"}}]}}`,
	"{\"delta\":{\"content\":[{\"text\":{\"value\":\"bad utf8 \xff\xfe here \xe2\x82\"}}]}}",
	"{\"delta\":{\"content\":[{\"text\":{\"value\":\"surrogate in utf8 \xed\xa0\x80\"}}]}}",
	// Rejected by encoding/json.
	``, `{`, `{"delta":}`, `{"delta":{"content":[{"text":{"value":"x"}}]}`, `{"a":1,}`,
	`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":.5}`, `{"a":tru}`, `{"a":nul}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}", `{"a":"unterminated}`,
	`{} {}`, `{}x`, `{"a" 1}`, `{1:2}`, `[1 2]`, `{"a":[1,]}`, `{"a":'x'}`,
}

func TestDeltaTexts(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{deltaSeeds[0], []string{"The"}},
		{deltaSeeds[2], []string{"a\"b\\c/d\b\f\n\r\t\u00e9\u20ac\U0001F600"}},
		{deltaSeeds[3], []string{"lone \uFFFD then \uFFFD and \uFFFDA"}},
		{deltaSeeds[4], []string{"one", "two"}},
		{deltaSeeds[5], []string{""}},
		{deltaSeeds[6], nil},
		{deltaSeeds[7], nil},
		{deltaSeeds[8], []string{"b"}},
		{deltaSeeds[9], nil},
		{deltaSeeds[10], []string{"escaped keys"}},
		{deltaSeeds[11], nil},
		{deltaSeeds[12], []string{"spaced"}},
		{"{\"delta\":{\"content\":[{\"text\":{\"value\":\"bad utf8 \xff\xfe here \xe2\x82\"}}]}}", []string{"bad utf8 \uFFFD\uFFFD here \uFFFD\uFFFD"}},
	}
	for _, tt := range tests {
		got, _, err := deltaTexts([]byte(tt.in), nil, nil)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got  %q, %v\n want %q", tt.in, got, err, tt.want)
		}
	}
	for _, s := range deltaSeeds {
		checkAgainstReference(t, []byte(s))
	}
}

func TestDeltaTextsDepth(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		arrays := strings.Repeat("[", n) + strings.Repeat("]", n)
		checkAgainstReference(t, []byte(arrays))
		objects := `{"delta":` + strings.Repeat(`{"a":`, n-2) + "1" + strings.Repeat("}", n-1)
		checkAgainstReference(t, []byte(objects))
	}
}

func TestDeltaTextsRecordings(t *testing.T) {
	b := recordings.Read(t, "send_email_stream_response.txt")
	n := 0
	for line := range strings.Lines(string(b)) {
		if data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok && data != "[DONE]" {
			checkAgainstReference(t, []byte(data))
			n++
		}
	}
	if n != 70 {
		t.Fatalf("checked %d payloads, want 70", n)
	}
}

// TestFastPathTakesRecordedLayout guards the speed of the common case: the
// deltas the service sends must not fall back to the general scanner.
func TestFastPathTakesRecordedLayout(t *testing.T) {
	b := recordings.Read(t, "send_email_stream_response.txt")
	n := 0
	for block := range strings.SplitSeq(string(b), "\n\n") {
		if data, ok := strings.CutPrefix(block, "event: thread.message.delta\ndata: "); ok {
			s := deltaScanner{b: []byte(data)}
			if !s.fast() {
				t.Errorf("general scanner needed for %s", data)
			}
			n++
		}
	}
	if n != 60 {
		t.Fatalf("%d deltas", n)
	}
	s := deltaScanner{b: []byte(`{"object":"thread.message.delta","id":"m","delta":{"content":[]}}`)}
	if s.fast() || len(s.out) != 0 {
		t.Fatal("fast path took another layout")
	}
}

func TestDeltaTextsAllocs(t *testing.T) {
	plain := []byte(deltaSeeds[0])
	escaped := []byte(deltaSeeds[1])
	var dst []string
	var scratch []byte
	for _, in := range [][]byte{plain, escaped} {
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			dst, scratch, err = deltaTexts(in, dst[:0], scratch)
			if err != nil || len(dst) != 1 {
				t.Fatal(err)
			}
		})
		if allocs > 1 {
			t.Errorf("%s: %v allocs, want at most 1", in, allocs)
		}
	}
}

func FuzzDeltaText(f *testing.F) {
	for _, s := range deltaSeeds {
		f.Add([]byte(s))
	}
	for _, p := range fuzztest.Payloads(f, "thread.message.delta", 3) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, data)
	})
}
