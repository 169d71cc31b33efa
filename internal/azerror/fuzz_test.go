package azerror_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire/internal/azerror"
)

// FuzzRead reads any error answer, whole and one byte at a time: the same
// answer either way, Raw the body as sent (within MaxBody), and nothing
// read from a body that is not a JSON object or null.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"No assistant found","type":"invalid_request_error","param":"assistant_id","code":"not_found"}}`,
		`{"error":{"code":429,"message":"Rate limit.","param":null}}`, `{"statusCode":401,"message":"Unauthorized."}`,
		`{"error":"plain"}`, `{"error":{"code":1e400}}`, `{"error":[],"message":{"a":1}}`, `null`, `[]`, `"s"`, ``,
		"<html><body>502 Bad Gateway</body></html>", `{"error":{"message":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a := azerror.Read(bytes.NewReader(body))
		b := azerror.Read(iotest.OneByteReader(bytes.NewReader(body)))
		if a.Message != b.Message || a.Type != b.Type || a.Param != b.Param || a.Code != b.Code || a.JSON != b.JSON || !bytes.Equal(a.Raw, b.Raw) {
			t.Fatalf("whole %+v, one byte at a time %+v", a, b)
		}
		if want := body[:min(len(body), azerror.MaxBody)]; !bytes.Equal(a.Raw, want) {
			t.Fatalf("Raw is %d bytes, want the first %d of the body", len(a.Raw), len(want))
		}
		var obj map[string]json.RawMessage
		if isObject := json.Unmarshal(a.Raw, &obj) == nil; a.JSON != isObject {
			t.Fatalf("JSON %v for %q", a.JSON, a.Raw)
		}
		if !a.JSON && (a.Message != "" || a.Code != "" || a.Type != "" || a.Param != "") {
			t.Fatalf("read %+v from a body that is not JSON", a)
		}
	})
}
