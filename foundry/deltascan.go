package foundry

import "github.com/brainwire/brainwire/internal/jsonscan"

// The thread.message.delta payload is the one upstream event that arrives
// thousands of times per run, so it is read with internal/jsonscan
// instead of encoding/json: the walk descends delta -> content[] -> text
// -> value, validates everything else without building it, and allocates
// only the text.
//
// It accepts exactly the documents encoding/json accepts and extracts what
// encoding/json would decode: keys match exactly after unescaping, the last
// of duplicate keys wins, invalid UTF-8 and lone surrogates become U+FFFD.

// maxDepth matches encoding/json's nesting limit.
const maxDepth = jsonscan.DefaultMaxDepth

type deltaScanner struct {
	b       []byte
	sc      jsonscan.Scanner
	out     []string
	scratch []byte // unescaped string bytes
}

// deltaTexts appends to dst the delta.content[].text.value strings of a
// thread.message.delta payload, empty ones included, and returns dst and
// the (possibly grown) scratch buffer for reuse.
func deltaTexts(data []byte, dst []string, scratch []byte) ([]string, []byte, error) {
	s := deltaScanner{b: data, out: dst, scratch: scratch}
	err := s.document()
	return s.out, s.scratch, err
}

// The layout the service sends, in its key order. A payload in exactly this
// layout is read by fast; anything else goes through the general walk.
const (
	fastHead   = `{"id":`
	fastObject = `,"object":"thread.message.delta","delta":{"content":[{"index":`
	fastType   = `,"type":"text","text":{"value":`
	fastEnd    = `}}]}}`
	fastAnnEnd = `,"annotations":[]}}]}}`
)

// fast reads a payload in the service's layout: the literal parts are
// compared as bytes and the variable parts (the id, the index, the text)
// are validated, so an accepted payload is valid JSON with exactly one
// text value. It reports false, having extracted nothing, for any other
// layout, valid or not. The scanner is called only for the two strings:
// this runs once per delta, thousands of times a run, and each call into
// the general walk costs more than the literal it would match.
func (s *deltaScanner) fast() bool {
	b, sc := s.b, &s.sc
	if !hasAt(b, 0, fastHead) || !hasAt(b, len(fastHead), `"`) {
		return false
	}
	sc.Reset(b)
	sc.Seek(len(fastHead))
	if _, _, err := sc.String(); err != nil { // the id
		return false
	}
	i := sc.Pos()
	if !hasAt(b, i, fastObject) {
		return false
	}
	if i = index(b, i+len(fastObject)); i < 0 || !hasAt(b, i, fastType) || !hasAt(b, i+len(fastType), `"`) {
		return false
	}
	sc.Seek(i + len(fastType))
	raw, plain, err := sc.String()
	if err != nil {
		return false
	}
	switch i = sc.Pos(); {
	case hasAt(b, i, fastEnd):
		i += len(fastEnd)
	case hasAt(b, i, fastAnnEnd):
		i += len(fastAnnEnd)
	default:
		return false
	}
	for ; i < len(b); i++ { // trailing whitespace only
		if c := b[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	s.out = append(s.out, s.text(raw, plain))
	return true
}

// hasAt reports whether b continues with lit at i.
func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// index returns the offset past the content part's index at i, a JSON
// number without sign, fraction or exponent ("0" or no leading zero), or
// -1 for anything else (which the general walk then reads).
func index(b []byte, i int) int {
	j := i
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == i || b[i] == '0' && j-i > 1 {
		return -1
	}
	return j
}

// text is a string's value as a new Go string.
func (s *deltaScanner) text(raw []byte, plain bool) string {
	if plain {
		return string(raw)
	}
	s.scratch = jsonscan.Unquote(s.scratch[:0], raw)
	return string(s.scratch)
}

func (s *deltaScanner) document() error {
	if s.fast() {
		return nil
	}
	sc := &s.sc
	sc.Reset(s.b)
	var err error
	if sc.Peek() == '{' {
		err = s.object(inTop)
	} else {
		err = sc.Skip()
	}
	if err != nil {
		return err
	}
	return sc.End()
}

// What an object's members are, on the path to the text values.
const (
	inOther = iota // anywhere else: validate and skip
	inTop          // the payload: looking for "delta"
	inDelta        // looking for "content"
	inPart         // a content part: looking for "text"
	inText         // looking for "value"
)

// want is the member an object of kind in leads on by.
var want = [...]string{inTop: "delta", inDelta: "content", inPart: "text", inText: "value"}

// object reads the object at the cursor. Members on the path to the text
// values are descended into; everything else is skipped. A repeated key
// replaces what its earlier occurrence extracted, as it would in
// encoding/json.
func (s *deltaScanner) object(in int) error {
	base := len(s.out)
	sc := &s.sc
	return sc.Object(func(raw []byte, plain bool) error {
		key := raw
		if !plain {
			s.scratch = jsonscan.Unquote(s.scratch[:0], raw)
			key = s.scratch
		}
		if in == inOther || string(key) != want[in] {
			return sc.Skip()
		}
		s.out = s.out[:base]
		switch c := sc.Peek(); {
		case in == inTop && c == '{':
			return s.object(inDelta)
		case in == inDelta && c == '[':
			return s.array(inPart)
		case in == inPart && c == '{':
			return s.object(inText)
		case in == inText && c == '"':
			raw, plain, err := sc.String()
			if err != nil {
				return err
			}
			s.out = append(s.out, s.text(raw, plain))
			return nil
		}
		return sc.Skip()
	})
}

// array reads the array at the cursor; object elements are members of
// kind in.
func (s *deltaScanner) array(in int) error {
	sc := &s.sc
	return sc.Array(func() error {
		if sc.Peek() == '{' {
			return s.object(in)
		}
		return sc.Skip()
	})
}
