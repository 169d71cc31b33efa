package agui

import (
	"bytes"
	"encoding/base64"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

func TestParseInput(t *testing.T) {
	wav := []byte("RIFF....WAVE")
	b64 := base64.StdEncoding.EncodeToString(wav)
	cases := []struct {
		name string
		body string
		want Input
	}{
		{"what HttpAgent sends", `{"threadId":"t","runId":"r","protocolVersion":"1.0","state":{},
			"messages":[{"id":"u1","role":"user","content":"  Call mom  "}],"tools":[],"context":[{"description":"d","value":"v"}],"forwardedProps":{}}`,
			Input{ThreadID: "t", RunID: "r", Text: "Call mom", Options: Options{State: true}}},
		{"the last user message of a conversation; unknown keys tolerated", `{"threadId":"t","runId":"r","extra":1,"messages":[
			{"id":"u1","role":"user","content":"first"},{"id":"a1","role":"assistant","content":"ok","toolCalls":[]},
			{"id":"u2","role":"user","content":"second","metadata":{"x":1}},{"id":"x","role":"activity","activityType":"a","content":{}}]}`,
			Input{ThreadID: "t", RunID: "r", Text: "second"}},
		{"text parts, one per line; other parts skipped", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[
			{"type":"text","text":"Lunch with"},{"type":"image","source":{"type":"url","value":"https://x/y.png"}},{"type":"text","text":"Sam"}]}]}`,
			Input{ThreadID: "t", RunID: "r", Text: "Lunch with\nSam"}},
		{"inline audio", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[
			{"type":"audio","source":{"type":"data","value":"` + b64 + `","mimeType":"audio/wav"},"metadata":{"filename":"memo.wav"}}]}]}`,
			Input{ThreadID: "t", RunID: "r", Audio: &Audio{Data: section(wav), MimeType: "audio/wav", Filename: "memo.wav"}}},
		{"unpadded base64", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[
			{"type":"audio","source":{"type":"data","value":"` + strings.TrimRight(b64, "=") + `","mimeType":"audio/wav"}}]}]}`,
			Input{ThreadID: "t", RunID: "r", Audio: &Audio{Data: section(wav), MimeType: "audio/wav"}}},
		{"reasoning asked for", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":{"reasoning":true}}`,
			Input{ThreadID: "t", RunID: "r", Text: "x", Options: Options{Reasoning: true}}},
		{"reasoning only for a literal true", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":{"reasoning":"yes"}}`,
			Input{ThreadID: "t", RunID: "r", Text: "x"}},
		{"forwardedProps of any shape", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"forwardedProps":[1,2]}`,
			Input{ThreadID: "t", RunID: "r", Text: "x"}},
		{"state that is not an object gets no state events", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"state":[1]}`,
			Input{ThreadID: "t", RunID: "r", Text: "x"}},
		{"null state is no state", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"state":null}`,
			Input{ThreadID: "t", RunID: "r", Text: "x"}},
		{"a misunderstood capture in the state: the message answers it", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"my sister"}],
			"state":{"other":true,"capture":{"outcome":"misunderstood","inboxItemId":"i3","questionText":"Who?","followUpRound":1}}}`,
			Input{ThreadID: "t", RunID: "r", Text: "my sister", FollowUp: &FollowUp{InboxItemID: "i3", Round: 2}, Options: Options{State: true}}},
		{"a round-less misunderstood capture is round 0", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"a"}],
			"state":{"capture":{"outcome":"misunderstood","inboxItemId":"i3"}}}`,
			Input{ThreadID: "t", RunID: "r", Text: "a", FollowUp: &FollowUp{InboxItemID: "i3", Round: 1}, Options: Options{State: true}}},
		{"any other outcome in the state starts a new capture", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"a"}],
			"state":{"capture":{"outcome":"classified","inboxItemId":"i3"}}}`,
			Input{ThreadID: "t", RunID: "r", Text: "a", Options: Options{State: true}}},
		{"empty ids are ids", `{"threadId":"","runId":"","messages":[{"role":"user","content":"a"}]}`,
			Input{Text: "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseInput([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.Audio != nil && c.want.Audio != nil {
				if g, w := bytesOf(got.Audio.Data), bytesOf(c.want.Audio.Data); !bytes.Equal(g, w) {
					t.Fatalf("audio %q, want %q", g, w)
				}
				got.Audio.Data, c.want.Audio.Data = nil, nil
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("\ngot  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func section(b []byte) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

func bytesOf(r *io.SectionReader) []byte {
	b, _ := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	return b
}

func TestParseInputRefuses(t *testing.T) {
	msgs := `"messages":[{"id":"u","role":"user","content":"x"}]`
	cases := []struct{ name, body, want string }{
		{"not JSON", `{"threadId":`, "malformed RunAgentInput"},
		{"not an object", `[1,2]`, "malformed RunAgentInput"},
		{"null", `null`, "threadId is required"},
		{"no threadId", `{"runId":"r",` + msgs + `}`, "threadId is required"},
		{"no runId", `{"threadId":"t",` + msgs + `}`, "runId is required"},
		{"no messages", `{"threadId":"t","runId":"r"}`, "messages is required"},
		{"threadId not a string", `{"threadId":1,"runId":"r",` + msgs + `}`, "malformed RunAgentInput"},
		{"messages not an array", `{"threadId":"t","runId":"r","messages":{}}`, "malformed RunAgentInput"},
		{"no user message", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"hi"}]}`, "no user message"},
		{"blank text", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"  "}]}`, "no text"},
		{"content of another shape", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":{"text":"x"}}]}`, "string or an array"},
		{"content missing", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user"}]}`, "string or an array"},
		{"only an image", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"data","value":"AA==","mimeType":"image/png"}}]}]}`, "no text"},
		{"audio by URL", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"url","value":"http://169.254.169.254/"}}]}]}`, "inline"},
		{"audio without source", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio"}]}]}`, "without a source"},
		{"audio not base64", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"data","value":"@@@","mimeType":"audio/wav"}}]}]}`, "not base64"},
		{"empty audio", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"data","value":"","mimeType":"audio/wav"}}]}]}`, "empty"},
		{"two audio parts", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"data","value":"AA==","mimeType":"audio/wav"}},{"type":"audio","source":{"type":"data","value":"AA==","mimeType":"audio/wav"}}]}]}`, "one audio part"},
		{"text and audio", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"hi"},{"type":"audio","source":{"type":"data","value":"AA==","mimeType":"audio/wav"}}]}]}`, "not both"},
		{"spoken answer to a question", `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"data","value":"AA==","mimeType":"audio/wav"}}]}],
			"state":{"capture":{"outcome":"misunderstood","inboxItemId":"i","followUpRound":0}}}`, "must be text"},
		{"misunderstood without its item", `{"threadId":"t","runId":"r",` + msgs + `,"state":{"capture":{"outcome":"misunderstood"}}}`, "inboxItemId"},
		{"misunderstood with a bad round", `{"threadId":"t","runId":"r",` + msgs + `,"state":{"capture":{"outcome":"misunderstood","inboxItemId":"i","followUpRound":-1}}}`, "followUpRound"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseInput([]byte(c.body))
			if brainwire.ErrorCode(err) != brainwire.EInvalid || !strings.Contains(brainwire.ErrorMessage(err), c.want) {
				t.Fatalf("error %v, want EInvalid containing %q", err, c.want)
			}
		})
	}
}

// FuzzParseInput: any body either parses into a capture with something to
// capture, or is refused as invalid; it never panics.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":"x"}],"state":{},"forwardedProps":{"reasoning":true}}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"audio","source":{"type":"data","value":"AA==","mimeType":"audio/wav"}}]}]}`))
	f.Add([]byte(`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"a"}],"state":{"capture":{"outcome":"misunderstood","inboxItemId":"i","followUpRound":2}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := ParseInput(body)
		if err != nil {
			if brainwire.ErrorCode(err) != brainwire.EInvalid {
				t.Fatalf("error of code %q: %v", brainwire.ErrorCode(err), err)
			}
			return
		}
		if (in.Text == "") == (in.Audio == nil) {
			t.Fatalf("parsed without exactly one of text and audio: %+v", in)
		}
		if in.FollowUp != nil && (in.FollowUp.InboxItemID == "" || in.FollowUp.Round < 1 || in.Audio != nil) {
			t.Fatalf("bad follow-up %+v", in)
		}
	})
}
