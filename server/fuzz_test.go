package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/fuzztest"
)

// Every route's request decoding is fuzzed through fuzzServer.check: any
// input gets a 2xx or a 4xx JSON error, never a 5xx or a panic, and a 4xx
// stores nothing.

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// malformedJSON are bodies every JSON route must refuse with a 4xx.
var malformedJSON = []string{
	``, ` `, `{`, `}`, `[]`, `null`, `"text"`, `1`, `{"text":"a"} {}`, `{"text":"a"}x`, `{"text":"a",}`,
	`{"text":"\ud800"}`, "{\"text\":\"\xff\"}", `{"text":"a","text":"b"}`, `{"TEXT":"a"}`,
	`{"text":"a","unknown":1}`, `{"text":1}`, `{"text":null}`, `{"text":["a"]}`, `{"a":` + strings.Repeat("[", 10001),
}

func FuzzCapture(f *testing.F) {
	s := newFuzzServer(f)
	const ct = "application/json"
	// A few recorded captures: each seed that is valid runs a whole
	// capture, and the seeds run in every go test.
	n := 0
	for _, fx := range fuzztest.Fixtures(f) {
		if fx.Capture.Kind == brainwire.KindText && n < 4 {
			f.Add(ct, jsonBody(map[string]string{"text": fx.Capture.Text, "thread_id": fx.Capture.ThreadID, "run_id": fx.Capture.RunID}))
			n++
		}
	}
	for _, b := range malformedJSON {
		f.Add(ct, []byte(b))
	}
	for _, b := range []string{
		`{"text":""}`, `{"text":"  \n\t"}`, `{"text":"Call mom","thread_id":"a b"}`, `{"text":"Call mom","run_id":"\u007f"}`,
		`{"text":"Call mom","thread_id":"` + strings.Repeat("t", 129) + `"}`, `{"text":"Call mom #fail"}`, `{"text":"Call mom #long:3"}`,
		`{"text":"` + strings.Repeat("é", brainwireMaxText+1) + `"}`, `{"text":"` + strings.Repeat("x", 64<<10) + `"}`,
	} {
		f.Add(ct, []byte(b))
	}
	for _, c := range []string{"", "text/plain", "application/json; charset=utf-8", "application/JSON", "application/json; =", "multipart/form-data"} {
		f.Add(c, jsonBody(map[string]string{"text": "Call mom about her birthday"}))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		s.check(t, s.request(http.MethodPost, "/api/capture", "", contentType, body, testKey))
	})
}

// brainwireMaxText is the server's default limit on capture text.
const brainwireMaxText = 10000

func FuzzFollowUp(f *testing.F) {
	fuzzJSONRoute(f, "/api/capture/follow-up", func(s *fuzzServer) []string {
		id := s.misunderstood.ID
		body := func(id, text string, round any) string {
			return string(jsonBody(map[string]any{"inbox_item_id": id, "follow_up_text": text, "follow_up_round": round}))
		}
		var seeds []string
		for _, fx := range fuzztest.Fixtures(f) {
			if fx.Capture.FollowUp != nil {
				seeds = append(seeds, body(id, fx.Capture.Text, fx.Capture.FollowUp.Round))
			}
		}
		return append(seeds,
			body(id, "I meant call my sister", 2), body(id, "x", 0), body(id, "x", 4), body(id, "x", -1), body(id, "x", "1"),
			body(id, "x", 1.5), body(id, "", 1), body(id, " ", 1), body(id, strings.Repeat("y", brainwireMaxText+1), 1),
			body("", "x", 1), body("nope", "x", 1), body("a/b", "x", 1), body(s.classified.ID, "x", 1), body(s.bobs.ID, "x", 1),
			`{"inbox_item_id":"`+id+`","follow_up_text":"x","follow_up_round":1e400}`,
			`{"inbox_item_id":"`+id+`","follow_up_text":"x","follow_up_round":1,"thread_id":"a b"}`,
			`{"inbox_item_id":"`+id+`","follow_up_text":"x","follow_up_round":1,"extra":true}`,
		)
	})
}

func FuzzRecategorize(f *testing.F) {
	s := newFuzzServer(f)
	for _, id := range []string{s.classified.ID, s.misunderstood.ID} {
		for _, b := range brainwire.Buckets {
			f.Add(id, jsonBody(map[string]string{"bucket": b}))
		}
	}
	for _, b := range []string{`{"bucket":"Misc"}`, `{"bucket":"people"}`, `{"bucket":""}`, `{"bucket":null}`, `{}`, `{"bucket":"Ideas","x":1}`} {
		f.Add(s.classified.ID, []byte(b))
	}
	for _, b := range malformedJSON {
		f.Add(s.classified.ID, []byte(b))
	}
	for _, id := range []string{s.bobs.ID, "nope", "", " ", "a/b", "..", "a%2Fb", "a?b", strings.Repeat("i", 129), "\x00"} {
		f.Add(id, []byte(`{"bucket":"Ideas"}`))
	}
	f.Fuzz(func(t *testing.T, id string, body []byte) {
		s.check(t, s.request(http.MethodPatch, "/api/inbox/"+id+"/recategorize", "", "application/json", body, testKey))
	})
}

const fuzzBoundary = "fuzzboundary"

// multipartBody writes parts (name, filename, content type, content) as a
// multipart/form-data body with the fuzz boundary.
func multipartBody(parts ...[4]string) []byte {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary(fuzzBoundary); err != nil {
		panic(err)
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p[0])
		if p[1] != "" {
			cd += fmt.Sprintf(`; filename=%q`, p[1])
		}
		h.Set("Content-Disposition", cd)
		if p[2] != "" {
			h.Set("Content-Type", p[2])
		}
		w, _ := mw.CreatePart(h)
		w.Write([]byte(p[3]))
	}
	mw.Close()
	return b.Bytes()
}

// FuzzVoice fuzzes the upload on capture-v2's route and, legacy, on
// v1's.
func FuzzVoice(f *testing.F) {
	s := newFuzzServer(f)
	ct := "multipart/form-data; boundary=" + fuzzBoundary
	wav := "RIFF\x24\x01\x00\x00WAVEfmt " + strings.Repeat("\x00", 256)
	for _, parts := range [][][4]string{
		{{"file", "capture.wav", "audio/wav", wav}},
		{{"file", "note", "audio/mp4", wav}},
		{{"file", "", "audio/webm", wav}},
		{{"file", "a.WAV", "application/octet-stream", wav}, {"thread_id", "", "", "thread-1"}, {"run_id", "", "", "run-1"}},
		{{"thread_id", "", "", "a b"}, {"file", "a.wav", "", wav}},
		{{"run_id", "", "", strings.Repeat("r", 200)}, {"file", "a.wav", "", wav}},
		{{"meta", "", "", "older builds send this"}, {"file", "a.ogg", "audio/ogg", wav}},
		{{"file", "a.txt", "text/plain", wav}},
		{{"file", "a.wav", "audio/wav; =", wav}},
		{{"file", "a.wav", "audio/wav", ""}},
		{{"file", "a.wav", "audio/wav", wav}, {"file", "b.wav", "audio/wav", wav}},
		{{"file", "a.wav", "audio/wav", strings.Repeat("x", fuzzMaxAudio+1)}},
		{{"thread_id", "", "", "t"}},
		{},
	} {
		f.Add(false, ct, multipartBody(parts...))
	}
	for _, c := range []string{"multipart/form-data", "multipart/form-data; boundary=", "multipart/mixed; boundary=" + fuzzBoundary, "application/json", ""} {
		f.Add(false, c, multipartBody([4]string{"file", "capture.wav", "audio/wav", wav}))
	}
	f.Add(false, ct, []byte("--"+fuzzBoundary+"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF"))
	for _, parts := range [][][4]string{
		{{"file", "voice-capture.m4a", "audio/m4a", "\x00\x00\x00\x20ftypM4A audio"}},
		{{"file", "notes.txt", "text/plain", "hello"}},
		{{"thread_id", "", "", "t 1"}, {"file", "a.wav", "audio/wav", wav}},
	} {
		f.Add(true, ct, multipartBody(parts...))
	}
	f.Add(true, ct, []byte("--"+fuzzBoundary+"\r\n\r\n"))
	f.Add(true, ct, []byte{})
	f.Fuzz(func(t *testing.T, legacy bool, contentType string, body []byte) {
		path := "/api/capture/voice"
		if legacy {
			path = "/api/voice-capture"
		}
		s.check(t, s.request(http.MethodPost, path, "", contentType, body, testKey))
	})
}

func FuzzInboxList(f *testing.F) {
	s := newFuzzServer(f)
	w := s.serve(s.request(http.MethodGet, "/api/inbox", "limit=1", "", nil, testKey))
	var page struct{ NextCursor string }
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || page.NextCursor == "" {
		f.Fatalf("a first page of one: %d %s", w.Code, w.Body)
	}
	for _, q := range []string{
		"", "limit=1", "limit=100", "limit=0", "limit=101", "limit=-1", "limit=1e2", "limit=%31", "limit=9223372036854775808",
		"status=classified", "status=pending", "status=misunderstood", "status=bogus", "status=", "status=classified&status=pending",
		"cursor=" + page.NextCursor, "limit=1&cursor=" + page.NextCursor, "cursor=" + page.NextCursor + "x", "cursor=!!", "cursor=",
		"cursor=MTow", "cursor=Ojo", "cursor=eA", "%zz", "a=b;c", "&&=&", "limit=1&limit=2",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		s.check(t, s.request(http.MethodGet, "/api/inbox", rawQuery, "", nil, testKey))
	})
}

func FuzzInboxItem(f *testing.F) {
	s := newFuzzServer(f)
	for _, id := range []string{s.classified.ID, s.misunderstood.ID, s.bobs.ID, "nope", "", "a/b", "..", "a%2Fb", strings.Repeat("i", 129), "\x7f"} {
		f.Add(false, id)
		f.Add(true, id)
	}
	f.Fuzz(func(t *testing.T, del bool, id string) {
		method := http.MethodGet
		if del {
			method = http.MethodDelete
		}
		s.check(t, s.request(method, "/api/inbox/"+id, "", "", nil, testKey))
	})
}

// fuzzJSONRoute fuzzes the JSON body of a POST route from seeds (which may
// name the seeded documents) and the malformed bodies every route refuses.
func fuzzJSONRoute(f *testing.F, path string, seeds func(*fuzzServer) []string) {
	s := newFuzzServer(f)
	for _, b := range append(seeds(s), malformedJSON...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s.check(t, s.request(http.MethodPost, path, "", "application/json", body, testKey))
	})
}

func FuzzAGUIRequest(f *testing.F) {
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	fuzzJSONRoute(f, "/api/agui", func(s *fuzzServer) []string {
		followUp := func(id string, round int) string {
			return `{"capture":{"outcome":"misunderstood","inboxItemId":"` + id + `","followUpRound":` + string(rune('0'+round)) + `}}`
		}
		return []string{
			runInput("Call mom about her birthday", `{}`, `{"reasoning":true}`),
			runInput([]map[string]string{{"type": "text", "text": "Pay the bill #no-tool"}}, `null`, `[]`),
			runInput("hmm #fail", `{}`, `{}`),
			runInput("I meant my sister", followUp(s.misunderstood.ID, 0), `{}`),
			runInput("x", followUp(s.misunderstood.ID, 7), `{}`),
			runInput("I meant my sister", followUp(s.bobs.ID, 0), `{}`),
			runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "data", "value": wav, "mimeType": "audio/wav"}}}, `{}`, `{}`),
			runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "url", "value": "http://x/"}}}, `{}`, `{}`),
			`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"` + strings.Repeat("a", 20000) + `"}]}`,
		}
	})
}

// FuzzLegacyRequests fuzzes the JSON bodies of the v1 routes, route
// choosing which.
func FuzzLegacyRequests(f *testing.F) {
	s := newFuzzServer(f)
	routes := []string{"/api/ag-ui", "/api/ag-ui/follow-up", "/api/ag-ui/respond"}
	m, p := s.misunderstood.ID, s.pending.ID
	for i, seeds := range [][]string{
		{
			`{"messages":[{"id":"m","role":"user","content":"Call mom"}],"thread_id":"thread-1","run_id":"run-1"}`,
			`{"messages":[{"content":"Pay the bill #fail"}],"state":{}}`,
			`{"messages":[{"role":"user","content":["x"]}]}`,
			`{"messages":[{"role":"user","content":"x"}],"thread_id":"a b"}`,
		},
		{
			`{"inbox_item_id":"` + m + `","follow_up_text":"I meant my sister","follow_up_round":1}`,
			`{"inbox_item_id":"` + m + `","follow_up_text":"x"}`,
			`{"inbox_item_id":"` + p + `","follow_up_text":"x","follow_up_round":2}`,
			`{"inbox_item_id":"` + s.bobs.ID + `","follow_up_text":"x","follow_up_round":1}`,
			`{"inbox_item_id":"nope","follow_up_text":"x","follow_up_round":1}`,
			`{"inbox_item_id":"../` + m + `","follow_up_text":"x","follow_up_round":1}`,
		},
		{
			`{"thread_id":"thread-1","response":"Projects","inbox_item_id":"` + p + `"}`,
			`{"thread_id":"thread-1","response":"Misc","inbox_item_id":"` + p + `"}`,
			`{"thread_id":"thread-1","response":"Ideas","inbox_item_id":"` + s.bobs.ID + `"}`,
			`{"response":"People","inbox_item_id":"nope"}`,
			`{"thread_id":"a\u0000b","response":"People","inbox_item_id":"` + p + `"}`,
		},
	} {
		for _, b := range append(seeds, malformedJSON...) {
			f.Add(uint8(i), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		s.check(t, s.request(http.MethodPost, routes[int(route)%len(routes)], "", "application/json", body, testKey))
	})
}
