package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/internal/recordings"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/wiring"
)

// The fixtures responses-real-* replay streams that Azure OpenAI and
// OpenAI sent, published as recordings (internal/recordings), not the
// simulator's. Each is one recorded tool round: a response with a
// reasoning summary that asks for a function call, and the response after
// the call's output. The streams are the recorded ones but for the
// function call, which asked for the recording's own tool: its name
// becomes file_capture and its arguments file_capture's, wherever the
// stream says them, the argument deltas cut to the recorded deltas'
// lengths with the last carrying the rest. Nothing else is changed: not
// the ids, the reasoning, the answer's text, the tool definitions the
// response objects echo, nor the sequence numbers.
//
// TestPublishedFixtures holds every fixture to that; record them and their
// golden files again with
//
//	go test ./replay -run TestPublishedFixtures -record-published
var recordPublished = flag.Bool("record-published", false, "record the responses-real-* fixtures again from the published recordings")

// publishedFixture is one fixture made of a published tool round.
type publishedFixture struct {
	name        string
	cassette    string // under recordings.PublishedDir
	description string
	provider    string // the service the recording was made against
	// arguments are the file_capture arguments the call is given.
	arguments string
}

// The recordings ask "What's the weather in Florence, Italy?": the capture
// is that question, and the agent files it as an errand.
const publishedQuestion = "What's the weather in Florence, Italy?"

var publishedFixtures = []publishedFixture{
	{
		name:        "responses-real-azure-openai",
		cassette:    "TestAzureResponsesWithSummaryThinking/azure-gpt-5-mini/thinking-streaming.yaml",
		description: "Responses API, real Azure OpenAI streams (gpt-5-mini): a reasoning summary and a function call, then three summary parts and the answer; only the call adapted to file_capture",
		provider:    responses.ProviderNameAzureOpenAI,
		arguments:   `{"text":"What's the weather in Florence, Italy?","bucket":"Admin","confidence":0.82,"status":"classified","title":"Check the weather in Florence"}`,
	},
	{
		name:        "responses-real-openai",
		cassette:    "TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking-streaming.yaml",
		description: "Responses API, real OpenAI streams (gpt-5): a reasoning summary and a function call, then the answer; only the call adapted to file_capture, filed below the threshold",
		provider:    responses.ProviderNameOpenAI,
		arguments:   `{"text":"What's the weather in Florence, Italy?","bucket":"Admin","confidence":0.45,"status":"pending","title":"Weather in Florence"}`,
	},
}

// streamEvent is one event of a recorded stream: its name and its data
// line, as the service wrote them.
type streamEvent struct{ name, data string }

// splitRecorded reads a recorded stream body: events apart by a blank
// line, each an event: line and a data: line.
func splitRecorded(t *testing.T, body string) []streamEvent {
	t.Helper()
	var out []streamEvent
	for block := range strings.SplitSeq(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, rest, ok := strings.Cut(block, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(rest, "data: ")
		if !ok || !ok1 || !ok2 || strings.Contains(data, "\n") {
			t.Fatalf("unexpected recorded event %q", block)
		}
		out = append(out, streamEvent{name, data})
	}
	return out
}

// jsonString is s as the contents of a JSON string, without the quotes,
// escaped as the service escapes (no HTML escaping).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

var callName = regexp.MustCompile(`("call_id":"[^"]+","name":)"([^"]+)"`)

// adapt returns the recorded round with its one function call turned into
// a file_capture call with arguments: every other byte is the recording's.
func adapt(t *testing.T, round [][]streamEvent, arguments string) [][]streamEvent {
	t.Helper()
	// The recorded call: its name and arguments, from its done item.
	var recorded struct {
		Name, Arguments string
	}
	var deltas []int // the argument delta events, by index into round[0]
	for i, ev := range round[0] {
		switch ev.name {
		case responses.TypeOutputItemDone:
			var d struct {
				Item struct{ Type, Name, Arguments string }
			}
			if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
				t.Fatal(err)
			}
			if d.Item.Type == "function_call" {
				if recorded.Name != "" {
					t.Fatal("the recorded response asks for more than one call")
				}
				recorded.Name, recorded.Arguments = d.Item.Name, d.Item.Arguments
			}
		case responses.TypeFunctionArgumentsDelta:
			deltas = append(deltas, i)
		}
	}
	if recorded.Name == "" || len(deltas) == 0 {
		t.Fatal("the recorded response asks for no call")
	}
	oldArgs, newArgs := `"`+jsonString(recorded.Arguments)+`"`, `"`+jsonString(arguments)+`"`
	pieces := cutLike(t, round[0], deltas, arguments)

	out := make([][]streamEvent, len(round))
	for r, evs := range round {
		out[r] = make([]streamEvent, len(evs))
		for i, ev := range evs {
			data := callName.ReplaceAllStringFunc(ev.data, func(m string) string {
				if sub := callName.FindStringSubmatch(m); sub[2] == recorded.Name {
					return sub[1] + `"` + brainwire.ToolFileCapture + `"`
				}
				return m
			})
			data = strings.ReplaceAll(data, `"arguments":`+oldArgs, `"arguments":`+newArgs)
			out[r][i] = streamEvent{ev.name, data}
		}
	}
	for k, i := range deltas {
		ev := out[0][i]
		old := `"delta":"` + jsonString(deltaOf(t, ev)) + `"`
		if strings.Count(ev.data, old) != 1 {
			t.Fatalf("argument delta %d: %s", k, ev.data)
		}
		out[0][i].data = strings.Replace(ev.data, old, `"delta":"`+jsonString(pieces[k])+`"`, 1)
	}
	return out
}

func deltaOf(t *testing.T, ev streamEvent) string {
	t.Helper()
	var d struct{ Delta string }
	if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
		t.Fatal(err)
	}
	return d.Delta
}

// cutLike cuts arguments into as many pieces as the recorded argument
// deltas, each as long (in characters) as the recorded one, the last
// carrying the rest.
func cutLike(t *testing.T, evs []streamEvent, deltas []int, arguments string) []string {
	t.Helper()
	pieces := make([]string, len(deltas))
	rest := arguments
	for k, i := range deltas {
		if k == len(deltas)-1 {
			pieces[k] = rest
			break
		}
		n := utf8.RuneCountInString(deltaOf(t, evs[i]))
		cut := 0
		for j := 0; j < n && cut < len(rest); j++ {
			_, size := utf8.DecodeRuneInString(rest[cut:])
			cut += size
		}
		pieces[k], rest = rest[:cut], rest[cut:]
	}
	return pieces
}

// adaptedRound reads a fixture's cassette and adapts its tool round.
func adaptedRound(t *testing.T, pf publishedFixture) [][]streamEvent {
	t.Helper()
	exs := recordings.ReadCassette(t, pf.cassette)
	if len(exs) != 2 {
		t.Fatalf("%s: %d exchanges, want a tool round of 2", pf.cassette, len(exs))
	}
	round := make([][]streamEvent, len(exs))
	for i, ex := range exs {
		round[i] = splitRecorded(t, ex.Body)
	}
	return adapt(t, round, pf.arguments)
}

// TestPublishedFixtures checks that each responses-real-* fixture's
// upstream streams are the published recording's, adapted as above and
// in nothing else, event for event and byte for byte; with
// -record-published it records them first.
func TestPublishedFixtures(t *testing.T) {
	for _, pf := range publishedFixtures {
		t.Run(pf.name, func(t *testing.T) {
			want := adaptedRound(t, pf)
			path := filepath.Join(fixturesDir, recorder.FileName(pf.name))
			if *recordPublished {
				recordPublishedFixture(t, pf, want, path)
			}
			fx, err := recorder.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]streamEvent
			for _, ex := range fx.Exchanges {
				if ex.Response == nil || !ex.Response.IsStream() {
					t.Fatalf("exchange %s %s has no streamed response", ex.Request.Method, ex.Request.Path)
				}
				var evs []streamEvent
				for _, ev := range ex.Response.Events {
					evs = append(evs, streamEvent{ev.Name, string(ev.Payload())})
				}
				got = append(got, evs)
			}
			if len(got) != len(want) {
				t.Fatalf("%d streams, the recording has %d", len(got), len(want))
			}
			for r := range want {
				if len(got[r]) != len(want[r]) {
					t.Fatalf("stream %d: %d events, the recording has %d", r+1, len(got[r]), len(want[r]))
				}
				for i := range want[r] {
					if got[r][i] != want[r][i] {
						t.Errorf("stream %d, event %d:\n got %s %s\nwant %s %s", r+1, i, got[r][i].name, got[r][i].data, want[r][i].name, want[r][i].data)
					}
				}
			}
			changed := 0
			for r, evs := range splitRounds(t, pf) {
				for i, ev := range evs {
					if ev != want[r][i] {
						changed++
					}
				}
			}
			t.Logf("%s: %d streams, %d events, %d adapted", pf.cassette, len(want), len(want[0])+len(want[1]), changed)
		})
	}
}

func splitRounds(t *testing.T, pf publishedFixture) [][]streamEvent {
	t.Helper()
	var out [][]streamEvent
	for _, ex := range recordings.ReadCassette(t, pf.cassette) {
		out = append(out, splitRecorded(t, ex.Body))
	}
	return out
}

// recordPublishedFixture records the capture of publishedQuestion through
// the real capture path against a stand-in that answers each response
// request with the next adapted stream, as Azure OpenAI's /openai/v1 does
// (previous_response_id chaining), and writes the fixture.
func recordPublishedFixture(t *testing.T, pf publishedFixture, round [][]streamEvent, path string) {
	t.Helper()
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/openai/v1/responses" || i >= len(round) {
			http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error","param":null,"code":null}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, ev := range round[i] {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	var model string
	{
		exs := recordings.ReadCassette(t, pf.cassette)
		var req struct{ Model string }
		if err := json.Unmarshal([]byte(exs[0].RequestBody), &req); err != nil {
			t.Fatal(err)
		}
		model = req.Model
	}
	agent := responses.Agent{Model: model, Instructions: instructions.Default().Text}
	opts := []responses.ProviderOption{
		responses.WithName(pf.provider),
		responses.WithChaining(responses.ChainPreviousResponse),
		responses.WithReasoningSummary("auto"), // as the recording's client asked
	}
	auth := func(next http.RoundTripper) http.RoundTripper {
		return responses.NewAPIKeyTransport("published-recording", "api-key", next)
	}
	ctx := context.Background()
	got, err := replay.Record(ctx, replay.RecordConfig{
		Agent:    wiring.Responses(srv.URL+"/openai/v1", "", agent, auth, opts...),
		Upstream: "published recording (" + recordings.PublishedModule + "@" + recordings.PublishedVersion + ", " + pf.cassette + ")",
		Secrets:  []string{"published-recording"},
	}, nil, replay.Request{Kind: brainwire.KindText, Text: publishedQuestion})
	if err != nil {
		t.Fatal(err)
	}
	if next != len(round) {
		t.Fatalf("the capture made %d response requests, the recording has %d", next, len(round))
	}
	fx := got.Fixture
	fx.Name, fx.Description = pf.name, pf.description
	if err := recorder.WriteFile(path, fx); err != nil {
		t.Fatal(err)
	}
	written, err := recorder.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The golden files, as the record command writes them.
	goldens, err := replay.Goldens(ctx, written, path, replay.Options{})
	if err != nil {
		t.Fatalf("the new fixture does not replay: %v", err)
	}
	if !bytes.Equal(goldens[0].Data, got.Response.Body) {
		t.Fatalf("the new fixture replays to different bytes than the phone got:\n%s",
			replay.Diff(string(got.Response.Body), string(goldens[0].Data), "recorded", "replayed"))
	}
	for _, g := range goldens {
		if err := recorder.WriteFileAtomic(g.Path, g.Data); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %s:\n%s", path, got.Response.Body)
}
