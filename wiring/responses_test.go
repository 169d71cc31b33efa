package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/wiring"
)

const phoneKey = "phone-key-0123456789abcdef"

// chunks records the reasoning chunks telemetry receives.
type chunks struct {
	mu  sync.Mutex
	all []brainwire.ReasoningChunk
}

func (c *chunks) StartCapture(ctx context.Context, _ brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, c
}
func (c *chunks) ProviderEvent(brainwire.AgentEvent) {}
func (c *chunks) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type == brainwire.CaptureReasoning {
		c.mu.Lock()
		c.all = append(c.all, ev.Chunk)
		c.mu.Unlock()
	}
}
func (c *chunks) End(brainwire.CaptureResult) {}

func (c *chunks) take() []brainwire.ReasoningChunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.all
	c.all = nil
	return out
}

type transcriber string

func (t transcriber) Transcribe(_ context.Context, audio io.Reader, _, _ string) (string, error) {
	_, _ = io.Copy(io.Discard, audio)
	return string(t), nil
}

// splitReads hands the client response bodies at most 7 bytes per read,
// however the bytes arrived, and counts the reads that end inside a
// multibyte UTF-8 character, or between a CR and its LF.
type splitReads struct {
	next             http.RoundTripper
	insideRune, crlf atomic.Int64
}

func (s *splitReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, s: s}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	s *splitReads
}

func (b *countingBody) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		i := n - 1
		for i > 0 && i > n-4 && !utf8.RuneStart(p[i]) {
			i--
		}
		switch {
		case p[n-1] == '\r':
			b.s.crlf.Add(1)
		case !utf8.FullRune(p[i:n]):
			b.s.insideRune.Add(1)
		}
	}
	return n, err
}

// network delivers streams the way a real network can: CRLF line ends,
// and writes of 11 bytes that split lines, CRLF pairs and UTF-8
// sequences.
func network(evs []rt.Event) rt.Response { return rt.Stream(evs...).CRLF().Chunked(11) }

// TestResponsesEndToEnd runs a typed capture the agent misunderstands, its
// follow-up, and a voice capture through wiring.New's wiring against a
// Responses API upstream speaking the published wire format, and checks
// what the phone gets (capture-v2, as with the classic API), what is
// filed, what the upstream was asked, and that every reasoning summary
// delta reaches telemetry as a chunk, in order, none lost.
func TestResponsesEndToEnd(t *testing.T) {
	const question = "Who is 李明, and what about them? 🍜"
	misunderstood := fmt.Sprintf(`{"text":"李明 🍜 zzkx","bucket":"People","confidence":0.2,"status":"misunderstood","question":%q}`, question)
	classified := `{"text":"李明 🍜 zzkx\nLunch with my friend 李明 on Sunday","bucket":"People","confidence":0.9,"status":"classified","title":"李明"}`
	voiceFiled := `{"text":"Call my sister about the concert tickets","bucket":"People","confidence":0.95,"status":"classified","title":"Sister"}`
	conv1, conv2 := rt.InConversation("conv_1"), rt.InConversation("conv_2")

	reasoning1 := []string{"**Reading**", "\r\n\r\nThe text ", "mentions 李明 🍜", " but not ", "what to do."}
	reasoning2 := []string{"**Clarified**\n\n", "Lunch with a ", "friend: People, 0.9."}
	reasoning3 := []string{"A voice ", "note: transcribing ", "first."}
	reasoning4 := []string{"The transcript is ", "about a sister: People."}
	up := rt.NewServer(t,
		// 1. A typed capture the agent does not understand.
		rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1","object":"conversation","created_at":1741290958,"metadata":{}}`)),
		rt.Expect("POST /responses", network(rt.NewTurn("resp_1", conv1).Reasoning("rs_1", reasoning1...).
			FunctionCall("fc_1", "call_1", "file_capture", misunderstood).Complete(rt.Usage{Input: 300, Output: 80, Reasoning: 40}).Events())),
		rt.Expect("POST /responses", network(rt.NewTurn("resp_2", conv1, rt.After("resp_1")).Message("msg_2", "I asked ", "what you meant.").
			Complete(rt.Usage{Input: 400, Output: 8}).Events())),
		// 2. Its follow-up, in the same conversation.
		rt.Expect("POST /responses", network(rt.NewTurn("resp_3", conv1).Reasoning("rs_3", reasoning2...).
			FunctionCall("fc_3", "call_3", "file_capture", classified).Complete(rt.Usage{Input: 500, Output: 60, Reasoning: 20}).Events())),
		rt.Expect("POST /responses", network(rt.NewTurn("resp_4", conv1).Message("msg_4", "Filed to People.").Complete(rt.Usage{Input: 600, Output: 5}).Events())),
		// 3. A voice capture: transcribe_audio, then file_capture.
		rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_2","object":"conversation","created_at":1741290958,"metadata":{}}`)),
		rt.Expect("POST /responses", rt.Respond(func(r rt.Request) rt.Response {
			// The agent calls transcribe_audio with the URL in the message.
			in, _ := json.Marshal(r.Body["input"])
			_, url, _ := strings.Cut(string(in), `\naudio: `)
			url, _, _ = strings.Cut(url, `"`)
			return network(rt.NewTurn("resp_5", conv2).Reasoning("rs_5", reasoning3...).
				FunctionCall("fc_5", "call_5", "transcribe_audio", `{"blob_url":"`+url+`"}`).Complete(rt.Usage{Input: 300, Output: 30}).Events())
		})),
		rt.Expect("POST /responses", network(rt.NewTurn("resp_6", conv2).Reasoning("rs_6", reasoning4...).
			FunctionCall("fc_6", "call_6", "file_capture", voiceFiled).Complete(rt.Usage{Input: 350, Output: 40}).Events())),
		rt.Expect("POST /responses", network(rt.NewTurn("resp_7", conv2).Message("msg_7", "Filed to People.").Complete(rt.Usage{Input: 400, Output: 5}).Events())),
	)

	st := openStore(t)
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seen := &chunks{}
	reads := &splitReads{next: up.Client().Transport}
	agent := responses.Agent{Model: "gpt-5-mini", Instructions: "You are the Classifier."}
	phone := serveWired(t, wiring.Config{
		Server: server.Config{
			Store:       st,
			Blobs:       blobs,
			Transcriber: transcriber("Call my sister about the concert tickets"),
			Observer:    seen,
		},
		Agent:     wiring.Responses(up.BaseURL(), up.Project(), agent, staticAuth, responses.WithReasoningSummary("auto"), responses.WithName(responses.ProviderNameFoundry)),
		Transport: reads,
	})
	post := func(path, ctype string, body []byte) string {
		t.Helper()
		return postAs(t, phone, path, ctype, body)
	}
	checkChunks := func(runID string, want []string) {
		t.Helper()
		got := seen.take()
		var text strings.Builder
		for i, c := range got {
			if c.Index != i || c.RunID != runID || c.UpstreamRunID == "" || c.UpstreamThreadID == "" {
				t.Fatalf("chunk %d: %+v", i, c)
			}
			text.WriteString(c.Text)
		}
		if text.String() != strings.Join(want, "") || len(got) != len(want) {
			t.Fatalf("%d chunks %q, want %d: %q", len(got), text.String(), len(want), strings.Join(want, ""))
		}
	}

	// 1. The capture: the phone gets MISUNDERSTOOD with the conversation to
	// continue, the item keeps it.
	got := post("/api/capture", "application/json", []byte(`{"text":"李明 🍜 zzkx","thread_id":"t-1","run_id":"r-1"}`))
	want := `data: {"type":"STEP_START","stepName":"Classifying"}

data: {"type":"STEP_END","stepName":"Classifying"}

data: {"type":"MISUNDERSTOOD","value":{"threadId":"t-1","inboxItemId":"00000000-0000-4000-8000-000000000001","questionText":"Who is 李明, and what about them? 🍜","foundryConversationId":"conv_1"}}

data: {"type":"COMPLETE","threadId":"t-1","runId":"r-1"}

`
	if got != want {
		t.Fatalf("capture stream:\n%s\nwant:\n%s", got, want)
	}
	checkChunks("r-1", append(append([]string{}, reasoning1...), "I asked ", "what you meant."))
	item, err := st.GetInboxItem(context.Background(), "alice", "00000000-0000-4000-8000-000000000001")
	if err != nil || item.Status != brainwire.StatusMisunderstood || item.UpstreamThreadID != "conv_1" {
		t.Fatalf("item %+v, %v", item, err)
	}

	// 2. The follow-up continues the conversation and files onto the item.
	got = post("/api/capture/follow-up", "application/json",
		[]byte(`{"inbox_item_id":"00000000-0000-4000-8000-000000000001","follow_up_text":"Lunch with my friend 李明 on Sunday","follow_up_round":1,"thread_id":"t-2","run_id":"r-2"}`))
	want = `data: {"type":"STEP_START","stepName":"Classifying"}

data: {"type":"STEP_END","stepName":"Classifying"}

data: {"type":"CLASSIFIED","value":{"inboxItemId":"00000000-0000-4000-8000-000000000001","bucket":"People","confidence":0.9}}

data: {"type":"COMPLETE","threadId":"t-2","runId":"r-2"}

`
	if got != want {
		t.Fatalf("follow-up stream:\n%s\nwant:\n%s", got, want)
	}
	checkChunks("r-2", append(append([]string{}, reasoning2...), "Filed to People."))
	item, _ = st.GetInboxItem(context.Background(), "alice", item.ID)
	if item.Status != brainwire.StatusClassified || item.FollowUpRounds != 1 || item.UpstreamThreadID != "conv_1" {
		t.Fatalf("refiled item %+v", item)
	}

	// 3. The voice capture.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "note.wav")
	part.Write([]byte("RIFF....WAVEfmt "))
	mw.WriteField("thread_id", "t-3")
	mw.WriteField("run_id", "r-3")
	mw.Close()
	got = post("/api/capture/voice", mw.FormDataContentType(), body.Bytes())
	if !strings.HasPrefix(got, `data: {"type":"STEP_START","stepName":"Processing"}`+"\n\n"+`data: {"type":"STEP_END","stepName":"Processing"}`+"\n\n"+
		`data: {"type":"CLASSIFIED","value":{"inboxItemId":"`) || !strings.HasSuffix(got, `,"bucket":"People","confidence":0.95}}`+"\n\n"+
		`data: {"type":"COMPLETE","threadId":"t-3","runId":"r-3"}`+"\n\n") {
		t.Fatalf("voice stream:\n%s", got)
	}
	checkChunks("r-3", append(append(append([]string{}, reasoning3...), reasoning4...), "Filed to People."))

	t.Logf("reads ending inside a UTF-8 character: %d, between CR and LF: %d", reads.insideRune.Load(), reads.crlf.Load())
	if reads.insideRune.Load() == 0 || reads.crlf.Load() == 0 {
		t.Errorf("no read ended inside a UTF-8 character (%d) or a CRLF pair (%d): the test did not split the streams",
			reads.insideRune.Load(), reads.crlf.Load())
	}

	// What the upstream was asked.
	reqs := up.Find("POST /responses")
	if len(reqs) != 7 {
		t.Fatalf("%d responses requested", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer entra-token" || r.Body["stream"] != true || r.Body["store"] != true ||
			r.Body["model"] != "gpt-5-mini" || r.Body["instructions"] != "You are the Classifier." {
			t.Fatalf("request %d: %s", i, r.RawBody)
		}
	}
	input := func(i int) string { b, _ := json.Marshal(reqs[i].Body["input"]); return string(b) }
	if reqs[2].Body["conversation"] != "conv_1" || !strings.Contains(input(2), `"role":"developer"`) ||
		!strings.Contains(input(2), `"content":"Lunch with my friend 李明 on Sunday","role":"user"`) {
		t.Errorf("the follow-up's request: %s", reqs[2].RawBody)
	}
	if !strings.Contains(input(1), `"call_id":"call_1"`) || !strings.Contains(input(1), `\"status\":\"misunderstood\"`) {
		t.Errorf("the tool output: %s", input(1))
	}
	if !strings.Contains(input(4), `This is a voice capture.`) || !strings.Contains(input(4), `\naudio: `) {
		t.Errorf("the voice message: %s", input(4))
	}
	if input(5) != `[{"call_id":"call_5","output":"{\"text\":\"Call my sister about the concert tickets\"}","type":"function_call_output"}]` {
		t.Errorf("the transcription's output: %s", input(5))
	}
}
