package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var documents = []string{
	`{}`, `[]`, `"x"`, `null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-2E-3`,
	`{"a":[1,-2.5e+10,0,1E-3,true,false,null,{"b":[[]]},"s"]}`,
	` { "a" : [ 1 , { } ] } ` + "\n",
	`{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\u20AC\ud83d\ude00"}`,
	`{"s":"lone \ud83d then \ude00 and \ud83d\u0041"}`,
	"{\"s\":\"bad utf8 \xff\xfe here \xe2\x82\"}",
	"{\"s\":\"surrogate in utf8 \xed\xa0\x80\"}",
	`{"a":1,"a":2}`,
	// Rejected by encoding/json.
	``, ` `, `{`, `{"a":}`, `{"a":1,}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":.5}`,
	`{"a":tru}`, `{"a":nul}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}",
	`{"a":"unterminated}`, `{} {}`, `{}x`, `{"a" 1}`, `{1:2}`, `[1 2]`, `{"a":[1,]}`, `{"a":'x'}`,
}

// jsonString is what encoding/json makes of a document that is a string.
func jsonString(doc []byte) (string, bool) {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// skipAll reads a whole document with Skip and End.
func skipAll(doc []byte, maxDepth int) error {
	s := Scanner{MaxDepth: maxDepth}
	s.Reset(doc)
	if err := s.Skip(); err != nil {
		return err
	}
	return s.End()
}

func TestSkipAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, d := range documents {
		if got, want := skipAll([]byte(d), 0) == nil, json.Valid([]byte(d)); got != want {
			t.Errorf("%q: scanner accepts %v, encoding/json %v", d, got, want)
		}
	}
}

func TestDepth(t *testing.T) {
	for _, n := range []int{DefaultMaxDepth - 1, DefaultMaxDepth, DefaultMaxDepth + 1} {
		for _, doc := range []string{
			strings.Repeat("[", n) + strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n),
		} {
			var v any
			want := json.Unmarshal([]byte(doc), &v) == nil
			if got := skipAll([]byte(doc), 0) == nil; got != want {
				t.Errorf("depth %d: scanner accepts %v, encoding/json %v", n, got, want)
			}
		}
	}
	if err := skipAll([]byte(`[[[1]]]`), 2); !errors.Is(err, ErrSyntax) {
		t.Errorf("a lower MaxDepth: got %v, want a syntax error", err)
	}
}

func TestStringDecodesLikeEncodingJSON(t *testing.T) {
	for _, d := range documents {
		want, ok := jsonString([]byte(d))
		if !ok {
			continue
		}
		var s Scanner
		s.Reset([]byte(d))
		raw, plain, err := s.String()
		if err != nil {
			t.Fatalf("%q: %v", d, err)
		}
		got := string(raw)
		if !plain {
			got = string(Unquote(nil, raw))
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", d, got, want)
		}
	}
	for _, d := range []string{`{"s":"x"}`} {
		var s Scanner
		s.Reset([]byte(d))
		if err := s.Object(func(key []byte, plain bool) error {
			raw, plain, err := s.String()
			if err != nil || !plain || string(raw) != "x" || string(key) != "s" {
				t.Errorf("member %q: %q %v %v", key, raw, plain, err)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInt64(t *testing.T) {
	for _, lit := range []string{"0", "-0", "7", "-12", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "1.0", "1e3", "-", "01", `"1"`, "null", "true"} {
		var want int64
		wantErr := json.Unmarshal([]byte(lit), &want) != nil || lit == "null"
		var s Scanner
		s.Reset([]byte(lit))
		got, err := s.Int64()
		if err == nil {
			err = s.End()
		}
		if (err != nil) != wantErr || (err == nil && got != want) {
			t.Errorf("%s: got %d, %v; encoding/json: %d, error %v", lit, got, err, want, wantErr)
		}
	}
}

func TestBoolAndNull(t *testing.T) {
	var s Scanner
	for lit, want := range map[string]bool{"true": true, "false": false} {
		s.Reset([]byte(lit))
		if got, err := s.Bool(); err != nil || got != want {
			t.Errorf("%s: %v %v", lit, got, err)
		}
	}
	for _, lit := range []string{"null", `"true"`, "1", "tru"} {
		s.Reset([]byte(lit))
		if _, err := s.Bool(); !errors.Is(err, ErrType) {
			t.Errorf("%s: got %v, want ErrType", lit, err)
		}
	}
	s.Reset([]byte(" null"))
	if !s.Null() || s.End() != nil {
		t.Error("null not read")
	}
}

func TestObjectAndArrayRefuseOtherTypes(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[1]`))
	if err := s.Object(func([]byte, bool) error { return nil }); !errors.Is(err, ErrType) || s.Pos() != 0 {
		t.Errorf("Object on an array: %v at %d", err, s.Pos())
	}
	s.Reset([]byte(`{}`))
	if err := s.Array(func() error { return nil }); !errors.Is(err, ErrType) || s.Pos() != 0 {
		t.Errorf("Array on an object: %v at %d", err, s.Pos())
	}
}

func TestSkipDoesNotAllocate(t *testing.T) {
	doc := []byte(`{"a":[1,-2.5e+10,{"b":[[]],"c":"x\ny"}],"d":{"e":{"f":null}}}`)
	var s Scanner
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset(doc)
		if err := s.Skip(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Skip allocates %.1f times per document", allocs)
	}
}

func FuzzSkip(f *testing.F) {
	for _, d := range documents {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, want := skipAll(doc, 0) == nil, json.Valid(doc); got != want {
			t.Fatalf("%q: scanner accepts %v, encoding/json %v", doc, got, want)
		}
		if want, ok := jsonString(doc); ok {
			var s Scanner
			s.Reset(doc)
			raw, plain, err := s.String()
			if err != nil {
				t.Fatalf("%q: %v", doc, err)
			}
			got := string(raw)
			if !plain {
				got = string(Unquote(nil, raw))
			}
			if got != want {
				t.Fatalf("%q: got %q, want %q", doc, got, want)
			}
		}
	})
}

// plainRunBytes is plainRun byte by byte.
func plainRunBytes(b []byte, j int) int {
	for j < len(b) && strClass[b[j]] == chPlain {
		j++
	}
	return j
}

func TestPlainRun(t *testing.T) {
	for c := range 256 {
		for pos := range 19 {
			b := []byte("abcdefghijklmnopqrs")
			b[pos] = byte(c)
			for from := range 3 {
				if got, want := plainRun(b, from), plainRunBytes(b, from); got != want {
					t.Fatalf("%q from %d: plainRun %d, byte by byte %d", b, from, got, want)
				}
			}
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	f.Add([]byte(`abcdefgh\`), 0)
	f.Add([]byte("0123456789abcdef\\\x01\"\xff"), 3)
	f.Fuzz(func(t *testing.T, b []byte, from int) {
		if from < 0 || from > len(b) {
			return
		}
		if got, want := plainRun(b, from), plainRunBytes(b, from); got != want {
			t.Fatalf("%q from %d: plainRun %d, byte by byte %d", b, from, got, want)
		}
	})
}
