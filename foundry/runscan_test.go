package foundry

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/internal/jsonscan"
)

// runSeeds are the recorded run objects and the edge cases of how
// encoding/json matches keys and reads values.
func runSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, name := range []string{"thread.run.created", "thread.run.queued", "thread.run.in_progress",
		"thread.run.requires_action", "thread.run.completed", "thread.run.failed", "thread.run.cancelled"} {
		out = append(out, fuzztest.Payloads(tb, name, 2)...)
	}
	for _, s := range []string{
		`null`, ` null `, `{}`, `[]`, `"run"`, `1`, `{"id":"run_1","ID":"run_2"}`, `{"Id":"run_1"}`, `{"\u0069d":"run_1"}`,
		`{"ſtatus":"completed"}`, `{"status":"completed","status":null}`, `{"id":1}`, `{"created_at":"x"}`, `{"created_at":1.5}`,
		`{"created_at":1e3}`, `{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, `{"usage":{"prompt_tokens":1},"usage":null}`,
		`{"required_action":{"type":"submit_tool_outputs","submit_tool_outputs":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}}}`,
		`{"instructions":"` + strings.Repeat("Classify. ", 500) + `","tools":[{"type":"function"}],"id":"run_1"}`,
		`{"id":"run_1"} x`, `{"id":"run_1",}`, `{"id":"\ud800"}`, "{\"id\":\"\xff\"}", `{"last_error":{"code":"server_error","message":"m"}}`,
		`{"tools":[` + strings.Repeat(`[`, 20000) + `]}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzDecodeRun: for any bytes, decodeRun errs exactly when
// json.Unmarshal does, and otherwise fills Run exactly as it does.
func FuzzDecodeRun(f *testing.F) {
	for _, s := range runSeeds(f) {
		f.Add(s)
	}
	var sc jsonscan.Scanner
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got Run
		wantErr := json.Unmarshal(data, &want)
		gotErr := decodeRun(&sc, data, &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: encoding/json says %v, decodeRun %v", data, wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ndecodeRun    %+v\nencoding/json %+v", data, got, want)
		}
	})
}

// BenchmarkRunObject decodes the recorded run objects (a run object
// carries the agent's instructions and tools).
func BenchmarkRunObject(b *testing.B) {
	var objs [][]byte
	size := 0
	for _, s := range runSeeds(b) {
		if len(s) > 200 && json.Valid(s) && s[0] == '{' {
			objs = append(objs, s)
			size += len(s)
		}
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, s := range objs {
				var r Run
				if err := json.Unmarshal(s, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decodeRun", func(b *testing.B) {
		var sc jsonscan.Scanner
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, s := range objs {
				var r Run
				if err := decodeRun(&sc, s, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
