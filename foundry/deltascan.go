package foundry

import (
	"bytes"

	"github.com/brainwire/brainwire/internal/jsonscan"
)

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
// layout, valid or not.
func (s *deltaScanner) fast() bool {
	b, sc := s.b, &s.sc
	sc.Reset(b)
	i, ok := after(b, 0, fastHead)
	if !ok {
		return false
	}
	sc.Seek(i)
	if _, _, err := sc.String(); err != nil {
		return false
	}
	if i, ok = after(b, sc.Pos(), fastObject); !ok {
		return false
	}
	sc.Seek(i)
	if c := sc.Peek(); c != '-' && (c < '0' || c > '9') || sc.Skip() != nil {
		return false
	}
	if i, ok = after(b, sc.Pos(), fastType); !ok {
		return false
	}
	sc.Seek(i)
	raw, plain, err := sc.String()
	if err != nil {
		return false
	}
	i, ok = after(b, sc.Pos(), fastEnd)
	if !ok {
		if i, ok = after(b, sc.Pos(), fastAnnEnd); !ok {
			return false
		}
	}
	sc.Seek(i)
	if sc.End() != nil {
		return false
	}
	s.out = append(s.out, s.text(raw, plain))
	return true
}

// after reports whether b continues with lit at i, and the offset past it.
func after(b []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, false
	}
	return i + len(lit), true
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
