package azerror_test

import (
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire/internal/azerror"
)

// The shapes services answer with are read in the providers' tests
// (foundry's TestAPIErrorBodies, adk's TestRunFaults); these are the
// corners.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       azerror.Answer // Raw is checked apart
	}{
		{
			name: "code without message falls back to the top-level message",
			body: `{"error":{"code":"x"},"message":"outer"}`,
			want: azerror.Answer{Message: "outer", Code: "x", JSON: true},
		},
		{
			name: "fields of the wrong kind",
			body: `{"error":{"message":{"nested":true},"code":[1]}}`,
			want: azerror.Answer{JSON: true},
		},
		{name: "empty object", body: `{}`, want: azerror.Answer{JSON: true}},
		{name: "JSON array", body: `[1,2]`, want: azerror.Answer{}},
		{name: "empty", body: "", want: azerror.Answer{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := azerror.Read(strings.NewReader(tc.body))
			if string(got.Raw) != tc.body {
				t.Errorf("Raw = %q, want the body %q", got.Raw, tc.body)
			}
			if got.Message != tc.want.Message || got.Type != tc.want.Type || got.Param != tc.want.Param ||
				got.Code != tc.want.Code || got.JSON != tc.want.JSON {
				t.Errorf("Read = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	got := azerror.Read(strings.NewReader(strings.Repeat("x", 2*azerror.MaxBody)))
	if len(got.Raw) != azerror.MaxBody || got.JSON {
		t.Errorf("read %d bytes (JSON %v), want %d", len(got.Raw), got.JSON, azerror.MaxBody)
	}
}

func TestReadKeepsWhatArrived(t *testing.T) {
	got := azerror.Read(iotest.TimeoutReader(strings.NewReader("gateway timeout")))
	if string(got.Raw) != "gateway timeout" {
		t.Errorf("Raw = %q, want what arrived before the read failed", got.Raw)
	}
}
