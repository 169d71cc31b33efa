package jsonw

import (
	"encoding/json"
	"math"
	"testing"
)

func TestStringRoundTripsThroughEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and \ backslash`, "line\nbreak\r\ttab",
		"\x00\x01\x1f control", "emoji 🧠 and CJK 漢字", "sep \u2028 \u2029",
		"</script>&", "25\uFFFDC",
	}
	for _, s := range cases {
		got := String(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("String(%q) = %s: not JSON: %v", s, got, err)
		}
		if back != s {
			t.Errorf("String(%q) round-trips to %q", s, back)
		}
	}
}

func TestStringReplacesInvalidUTF8(t *testing.T) {
	got := String(nil, "a\xffb")
	if string(got) != `"a\ufffdb"` {
		t.Fatalf("got %s", got)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "🧠", "\xff\xfe", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("String(%q) = %s: not JSON: %v", s, got, err)
		}
		want, _ := json.Marshal(s) // encoding/json also maps invalid UTF-8 to U+FFFD
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("String(%q) decodes to %q, encoding/json gives %q", s, back, wantBack)
		}
	})
}

func TestFloat(t *testing.T) {
	for in, want := range map[float64]string{0.9: "0.9", 1: "1", 0: "0", 0.125: "0.125", math.NaN(): "0", math.Inf(1): "0"} {
		if got := string(Float(nil, in)); got != want {
			t.Errorf("Float(%v) = %s, want %s", in, got, want)
		}
	}
}
