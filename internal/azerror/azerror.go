// Package azerror reads the body of an Azure service's non-2xx answer.
//
// Azure REST APIs answer {"error":{"message","type","param","code"}}, with
// code and param as strings, numbers or null; their gateways sometimes
// {"statusCode","message"} or {"error":"..."}; FastAPI servers (the ADK
// API server) {"detail":"..."}, or for a body that fails validation
// {"detail":[{"loc":[...],"msg":"..."}]}; proxies in between plain text or
// HTML. Each client keeps its own error type and decides what to
// show when the body says nothing; this package only reads what it says.
package azerror

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxBody bounds how much of an answer is read: Azure's error bodies are
// small, and a proxy's error page need not be read whole.
const MaxBody = 64 << 10

// Answer is what an error answer said.
type Answer struct {
	Message string // error.message, error itself when a string, a top-level message, or detail
	Type    string
	Param   string
	Code    string // a string code, or a number's digits
	// Raw is the body as read, at most MaxBody bytes.
	Raw []byte
	// JSON reports whether Raw is a JSON object (or null), whether or not
	// it held any of the fields above.
	JSON bool
}

// Read reads an error answer's body from r; the caller closes it. A body
// that breaks off is read as far as it goes: what arrived is still the best
// account of the failure.
func Read(r io.Reader) Answer {
	body, _ := io.ReadAll(io.LimitReader(r, MaxBody))
	a := Answer{Raw: body}
	var payload struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &payload) != nil {
		return a
	}
	a.JSON = true
	var inner struct {
		Message, Type, Param, Code json.RawMessage
	}
	if json.Unmarshal(payload.Error, &inner) == nil {
		a.Message, a.Type, a.Param, a.Code = Text(inner.Message), Text(inner.Type), Text(inner.Param), Text(inner.Code)
	} else {
		a.Message = Text(payload.Error)
	}
	if a.Message == "" {
		a.Message = Text(payload.Message)
	}
	if a.Message == "" {
		a.Message = detail(payload.Detail)
	}
	return a
}

// detail reads FastAPI's detail: a string, or a validation failure's
// list, as "loc.path: msg; ...".
func detail(raw json.RawMessage) string {
	var list []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return Text(raw)
	}
	msgs := make([]string, len(list))
	for i, v := range list {
		loc := make([]string, len(v.Loc))
		for j, l := range v.Loc {
			loc[j] = fmt.Sprint(l)
		}
		msgs[i] = strings.Join(loc, ".") + ": " + v.Msg
	}
	return strings.Join(msgs, "; ")
}

// Text reads a JSON string, or the literal text of a number or boolean;
// null and anything else read as "".
func Text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b)
	}
	return ""
}
