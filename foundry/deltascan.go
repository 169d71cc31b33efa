package foundry

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The thread.message.delta payload is the one upstream event that arrives
// thousands of times per run, so it is read by this scanner instead of
// encoding/json: it walks delta -> content[] -> text -> value, validates
// everything else without building it, and allocates only the text.
//
// It accepts exactly the documents encoding/json accepts and extracts what
// encoding/json would decode: keys match exactly after unescaping, the last
// of duplicate keys wins, invalid UTF-8 and lone surrogates become U+FFFD.

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

var errSyntax = errors.New("invalid JSON")

// Byte classes inside JSON strings.
const (
	chPlain   = iota // printable ASCII other than '"' and '\\'
	chSpecial        // '"', '\\' or a control character
	chHigh           // first byte of a multibyte UTF-8 sequence (or invalid)
)

var strClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c < 0x20 || c == '"' || c == '\\':
			t[c] = chSpecial
		case c >= utf8.RuneSelf:
			t[c] = chHigh
		}
	}
	return t
}()

type deltaScanner struct {
	b       []byte
	i       int
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
// layout is read by fast; anything else goes through the general scanner.
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
	b := s.b
	if !s.literal(fastHead) || s.peek() != '"' {
		return false
	}
	if _, _, err := s.scanString(); err != nil {
		return false
	}
	if !s.literal(fastObject) || s.number() != nil || !s.literal(fastType) || s.peek() != '"' {
		return false
	}
	start := s.i + 1
	end, plain, err := s.scanString()
	if err != nil {
		return false
	}
	if !s.literal(fastEnd) && !s.literal(fastAnnEnd) {
		return false
	}
	s.ws()
	if s.i != len(b) {
		return false
	}
	if plain {
		s.out = append(s.out, string(b[start:end]))
	} else {
		s.scratch = unquote(s.scratch[:0], b[start:end])
		s.out = append(s.out, string(s.scratch))
	}
	return true
}

// literal consumes lit if the input continues with it.
func (s *deltaScanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *deltaScanner) document() error {
	if s.fast() {
		return nil
	}
	s.i = 0
	s.ws()
	var err error
	if s.peek() == '{' {
		err = s.object(1, inTop)
	} else {
		err = s.skipValue(1)
	}
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.errorf("unexpected %q after top-level value", s.b[s.i])
	}
	return nil
}

func (s *deltaScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, s.i, fmt.Sprintf(format, args...))
}

func (s *deltaScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func (s *deltaScanner) ws() {
	for s.i < len(s.b) && isSpace[s.b[s.i]] {
		s.i++
	}
}

// What an object's members are, on the path to the text values.
const (
	inOther = iota // anywhere else: validate and skip
	inTop          // the payload: looking for "delta"
	inDelta        // looking for "content"
	inPart         // a content part: looking for "text"
	inText         // looking for "value"
)

// object scans the object at s.i. Members on the path to the text values
// are descended into; everything else is skipped. A repeated key replaces
// what its earlier occurrence extracted, as it would in encoding/json.
func (s *deltaScanner) object(depth, in int) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	base := len(s.out)
	s.i++ // '{'
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.errorf("expected object key")
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		s.ws()
		if s.peek() != ':' {
			return s.errorf("expected ':' after object key")
		}
		s.i++
		s.ws()
		if err := s.member(key, depth+1, in, base); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return nil
		default:
			return s.errorf("expected ',' or '}' in object")
		}
	}
}

// member scans the value of key in an object of kind in; base is the
// length of s.out when that object started.
func (s *deltaScanner) member(key []byte, depth, in, base int) error {
	var want string
	switch in {
	case inTop:
		want = "delta"
	case inDelta:
		want = "content"
	case inPart:
		want = "text"
	case inText:
		want = "value"
	default:
		return s.skipValue(depth)
	}
	if string(key) != want {
		return s.skipValue(depth)
	}
	s.out = s.out[:base]
	switch c := s.peek(); {
	case in == inTop && c == '{':
		return s.object(depth, inDelta)
	case in == inDelta && c == '[':
		return s.array(depth, inPart)
	case in == inPart && c == '{':
		return s.object(depth, inText)
	case in == inText && c == '"':
		v, err := s.stringValue()
		if err != nil {
			return err
		}
		s.out = append(s.out, v)
		return nil
	}
	return s.skipValue(depth)
}

// array scans the array at s.i; object elements are members of kind in.
func (s *deltaScanner) array(depth, in int) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	s.i++ // '['
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		var err error
		if in != inOther && s.peek() == '{' {
			err = s.object(depth+1, in)
		} else {
			err = s.skipValue(depth + 1)
		}
		if err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return nil
		default:
			return s.errorf("expected ',' or ']' in array")
		}
	}
}

// key returns the key at s.i, unescaped if needed. The result may alias
// scratch and is valid until the next string is scanned.
func (s *deltaScanner) key() ([]byte, error) {
	start := s.i + 1
	end, plain, err := s.scanString()
	if err != nil {
		return nil, err
	}
	if plain {
		return s.b[start:end], nil
	}
	s.scratch = unquote(s.scratch[:0], s.b[start:end])
	return s.scratch, nil
}

// stringValue returns the string at s.i as a new Go string.
func (s *deltaScanner) stringValue() (string, error) {
	start := s.i + 1
	end, plain, err := s.scanString()
	if err != nil {
		return "", err
	}
	if plain {
		return string(s.b[start:end]), nil
	}
	s.scratch = unquote(s.scratch[:0], s.b[start:end])
	return string(s.scratch), nil
}

// scanString validates the string starting at s.i (a '"'), leaves s.i after
// its closing quote and returns the index of that quote. plain reports that
// the raw bytes are already the decoded value: no escapes, valid UTF-8.
func (s *deltaScanner) scanString() (end int, plain bool, err error) {
	b := s.b
	j := s.i + 1
	plain = true
	high := false
	for {
		for j < len(b) && strClass[b[j]] == chPlain {
			j++
		}
		if j >= len(b) {
			s.i = j
			return 0, false, s.errorf("unterminated string")
		}
		switch c := b[j]; {
		case c == '"':
			if high && plain && !utf8.Valid(b[s.i+1:j]) {
				plain = false
			}
			s.i = j + 1
			return j, plain, nil
		case c == '\\':
			plain = false
			j++
			if j >= len(b) {
				s.i = j
				return 0, false, s.errorf("unterminated string")
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+4 >= len(b) || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					s.i = j
					return 0, false, s.errorf("invalid \\u escape")
				}
				j += 5
			default:
				s.i = j
				return 0, false, s.errorf("invalid escape %q", b[j])
			}
		case c < 0x20:
			s.i = j
			return 0, false, s.errorf("control character %#x in string", c)
		default: // chHigh
			high = true
			j++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unquote appends the decoded contents of a string already validated by
// scanString, the way encoding/json decodes it.
func unquote(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\\':
			i++
			switch src[i] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hexVal(src[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+5 < len(src) && src[i] == '\\' && src[i+1] == 'u' && isHex(src[i+2]) && isHex(src[i+3]) && isHex(src[i+4]) && isHex(src[i+5]) {
						if dec := utf16.DecodeRune(r, hexVal(src[i+2:])); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, src[i])
			}
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, src[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// skipValue validates and skips the value at s.i.
func (s *deltaScanner) skipValue(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.scanString()
		return err
	case c == '{':
		return s.object(depth, inOther)
	case c == '[':
		return s.array(depth, inOther)
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't' && s.literal("true"), c == 'f' && s.literal("false"), c == 'n' && s.literal("null"):
		return nil
	case s.i >= len(s.b):
		return s.errorf("unexpected end of input")
	default:
		return s.errorf("unexpected %q looking for a value", c)
	}
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *deltaScanner) number() error {
	b, j := s.b, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		j = digits(b, j)
	default:
		s.i = j
		return s.errorf("invalid number")
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			s.i = j
			return s.errorf("invalid number")
		}
		j = digits(b, j)
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			s.i = j
			return s.errorf("invalid number")
		}
		j = digits(b, j)
	}
	s.i = j
	return nil
}

func digits(b []byte, j int) int {
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	return j
}
