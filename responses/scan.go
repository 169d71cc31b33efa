package responses

import (
	"errors"
	"fmt"

	"github.com/brainwire/brainwire/internal/jsonscan"
)

// The text delta events (response.output_text.delta,
// response.reasoning_summary_text.delta, ...) arrive thousands of times per
// response, so their payloads are read with internal/jsonscan instead of
// encoding/json: one pass over the bytes that validates the whole document
// and keeps only the top-level "type", "delta" and "error" members. The
// delta text is the only allocation.
//
// It accepts exactly the documents encoding/json accepts into a
// map[string]json.RawMessage and reads the members as encoding/json reads
// them into strings: keys match after unescaping, the last of duplicate
// keys wins, null reads as "", a value of another type is an error, and
// invalid UTF-8 and lone surrogates become U+FFFD. FuzzDeltaPayload holds
// it to that.

// maxDepth matches encoding/json's nesting limit.
const maxDepth = jsonscan.DefaultMaxDepth

var errSyntax = errors.New("invalid JSON")

// deltaPayload is what the decoder reads from a delta event.
type deltaPayload struct {
	typ      eventType // data.type, eventUnknown when absent or unknown
	hasType  bool      // data.type was a string
	delta    string
	hasError bool // a top-level "error" member that is not null
}

// member states, for the last occurrence of a key.
const (
	memberAbsent = iota
	memberString
	memberNull
	memberOther
)

// stringMember is the last occurrence of a member read as a string.
type stringMember struct {
	state int
	raw   []byte // the string's raw contents, aliasing the document
	plain bool
}

// read reads the value at sc's cursor.
func (m *stringMember) read(sc *jsonscan.Scanner) error {
	*m = stringMember{state: memberNull}
	if sc.Null() {
		return nil
	}
	raw, plain, err := sc.String()
	if errors.Is(err, jsonscan.ErrType) {
		m.state = memberOther
		return sc.Skip()
	}
	if err != nil {
		return err
	}
	*m = stringMember{state: memberString, raw: raw, plain: plain}
	return nil
}

// text is the member's decoded string, unescaped into scratch when it
// needs to be.
func (m *stringMember) text(scratch *[]byte) []byte {
	if m.plain {
		return m.raw
	}
	*scratch = jsonscan.Unquote((*scratch)[:0], m.raw)
	return *scratch
}

// scanDelta reads a delta event's payload into p with sc. scratch is
// reused between calls and returned, possibly grown.
func scanDelta(sc *jsonscan.Scanner, data []byte, p *deltaPayload, scratch []byte) ([]byte, error) {
	*p = deltaPayload{}
	var typ, delta, errMember stringMember
	err := eachMember(sc, data, 1, &scratch, func(key []byte) error {
		switch string(key) {
		case "type":
			return typ.read(sc)
		case "delta":
			return delta.read(sc)
		case "error":
			return errMember.read(sc)
		}
		return sc.Skip()
	})
	if err != nil {
		return scratch, err
	}
	if typ.state == memberOther || delta.state == memberOther {
		return scratch, fmt.Errorf("%w: type and delta must be strings", errSyntax)
	}
	if typ.state == memberString {
		p.hasType, p.typ = true, typeOf(typ.text(&scratch))
	}
	if delta.state == memberString {
		p.delta = string(delta.text(&scratch))
	}
	p.hasError = errMember.state == memberString || errMember.state == memberOther
	return scratch, nil
}

// eachMember validates the JSON value b, found at nesting depth depth, and
// when it is an object calls f with each member's key (unescaped into
// scratch if need be, valid during the call) and sc's cursor on the
// member's value, which f must read or skip: the walk encoding/json makes
// reading b into a map[string]json.RawMessage (null is no members; another
// value is an error).
func eachMember(sc *jsonscan.Scanner, b []byte, depth int, scratch *[]byte, f func(key []byte) error) error {
	sc.Reset(b)
	sc.MaxDepth = maxDepth - depth + 1
	if sc.Null() {
		return sc.End()
	}
	err := sc.Object(func(raw []byte, plain bool) error {
		key := raw
		if !plain {
			*scratch = jsonscan.Unquote((*scratch)[:0], raw)
			key = *scratch
		}
		return f(key)
	})
	if errors.Is(err, jsonscan.ErrType) {
		return fmt.Errorf("%w: want an object", errSyntax)
	}
	if err == nil {
		err = sc.End()
	}
	return syntaxError(err)
}

// syntaxError says a document is not JSON in this package's words.
func syntaxError(err error) error {
	if errors.Is(err, jsonscan.ErrSyntax) {
		return fmt.Errorf("%w (%w)", errSyntax, err)
	}
	return err
}

// members is eachMember handing f each member's raw value.
func members(b []byte, depth int, scratch *[]byte, f func(key, value []byte) error) error {
	var sc jsonscan.Scanner
	return eachMember(&sc, b, depth, scratch, func(key []byte) error {
		sc.Peek()
		start := sc.Pos()
		if err := sc.Skip(); err != nil {
			return err
		}
		return f(key, b[start:sc.Pos()])
	})
}

// elements validates the JSON value b, found at nesting depth depth, and
// calls f with each element when it is an array: the walk encoding/json
// makes reading b into a []json.RawMessage (null is no elements; another
// value is an error).
func elements(b []byte, depth int, f func(elem []byte) error) error {
	var sc jsonscan.Scanner
	sc.Reset(b)
	sc.MaxDepth = maxDepth - depth + 1
	if sc.Null() {
		return sc.End()
	}
	err := sc.Array(func() error {
		start := sc.Pos()
		if err := sc.Skip(); err != nil {
			return err
		}
		return f(b[start:sc.Pos()])
	})
	if errors.Is(err, jsonscan.ErrType) {
		return fmt.Errorf("%w: want an array", errSyntax)
	}
	if err == nil {
		err = sc.End()
	}
	return syntaxError(err)
}
