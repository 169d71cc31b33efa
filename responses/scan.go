package responses

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// The text delta events (response.output_text.delta,
// response.reasoning_summary_text.delta, ...) arrive thousands of times per
// response, so their payloads are read by this scanner instead of
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
const maxDepth = 10000

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

type scanner struct {
	b       []byte
	i       int
	scratch []byte // unescaped key or value bytes

	typState, deltaState, errState int
	typStart, typEnd               int
	typPlain                       bool
	deltaStart, deltaEnd           int
	deltaPlain                     bool
}

// scanDelta reads a delta event's payload into p. scratch is reused
// between calls and returned, possibly grown.
func scanDelta(data []byte, p *deltaPayload, scratch []byte) ([]byte, error) {
	s := scanner{b: data, scratch: scratch}
	*p = deltaPayload{}
	err := s.document()
	if err != nil {
		return s.scratch, err
	}
	if s.typState == memberOther || s.deltaState == memberOther {
		return s.scratch, fmt.Errorf("%w: type and delta must be strings", errSyntax)
	}
	if s.typState == memberString {
		p.hasType = true
		if s.typPlain {
			p.typ = typeOf(s.b[s.typStart:s.typEnd])
		} else {
			s.scratch = unquote(s.scratch[:0], s.b[s.typStart:s.typEnd])
			p.typ = typeOf(s.scratch)
		}
	}
	if s.deltaState == memberString {
		if s.deltaPlain {
			p.delta = string(s.b[s.deltaStart:s.deltaEnd])
		} else {
			s.scratch = unquote(s.scratch[:0], s.b[s.deltaStart:s.deltaEnd])
			p.delta = string(s.scratch)
		}
	}
	p.hasError = s.errState == memberString || s.errState == memberOther
	return s.scratch, nil
}

func (s *scanner) document() error {
	if s.flat() {
		return nil
	}
	s.reset()
	s.ws()
	var err error
	switch c := s.peek(); {
	case c == '{':
		err = s.object(1, true)
	case c == 'n' && s.literal("null"):
		// encoding/json reads null into a map as no members.
	default:
		if err = s.skipValue(1); err == nil {
			s.ws()
			if s.i != len(s.b) {
				return s.errorf("unexpected %q after top-level value", s.b[s.i])
			}
			return fmt.Errorf("%w: the payload is not an object", errSyntax)
		}
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

// flat reads the layout the services send delta events in: one object
// without whitespace whose keys are plain ASCII and whose values are
// strings, numbers, [] or null, in any order. It validates what it reads as the
// general scanner does, and reports false, for the general scanner to
// start again, on anything else.
func (s *scanner) flat() bool {
	b := s.b
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	if b[i] == '}' {
		if len(b) != 2 {
			return false
		}
		s.i = 2
		return true
	}
	for {
		// The key: plain printable ASCII.
		if b[i] != '"' {
			return false
		}
		ks := i + 1
		j := ks
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
				return false
			}
			j++
		}
		if j+1 >= len(b) || b[j+1] != ':' {
			return false
		}
		key := memberOtherKey
		switch string(b[ks:j]) {
		case "type":
			key = memberTypeKey
		case "delta":
			key = memberDeltaKey
		case "error":
			key = memberErrorKey
		}
		i = j + 2
		// The value.
		state, vs, ve, plain := memberOther, 0, 0, true
		switch c := b[i]; {
		case c == '"':
			s.i = i
			end, p, err := s.scanString()
			if err != nil {
				return false
			}
			state, vs, ve, plain, i = memberString, i+1, end, p, end+1
		case c == '-' || '0' <= c && c <= '9':
			s.i = i
			if s.number() != nil {
				return false
			}
			i = s.i
		case c == '[' && i+1 < len(b) && b[i+1] == ']':
			i += 2
		case c == 'n' && i+4 <= len(b) && string(b[i:i+4]) == "null":
			state, i = memberNull, i+4
		default:
			return false
		}
		switch key {
		case memberTypeKey:
			s.typState, s.typStart, s.typEnd, s.typPlain = state, vs, ve, plain
		case memberDeltaKey:
			s.deltaState, s.deltaStart, s.deltaEnd, s.deltaPlain = state, vs, ve, plain
		case memberErrorKey:
			s.errState = state
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			if i != len(b)-1 {
				return false
			}
			s.i = len(b)
			return true
		default:
			return false
		}
		if i >= len(b) {
			return false
		}
	}
}

// reset forgets what a partial read kept.
func (s *scanner) reset() {
	s.i = 0
	s.typState, s.deltaState, s.errState = memberAbsent, memberAbsent, memberAbsent
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace[s.b[s.i]] {
		s.i++
	}
}

// literal consumes lit if the input continues with it.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// object scans the object at s.i; top marks the payload itself, whose
// members the scanner keeps.
func (s *scanner) object(depth int, top bool) error {
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
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
		key := memberOtherKey
		if top {
			k, err := s.key()
			if err != nil {
				return err
			}
			key = k
		} else if _, _, err := s.scanString(); err != nil {
			return err
		}
		s.ws()
		if s.peek() != ':' {
			return s.errorf("expected ':' after object key")
		}
		s.i++
		s.ws()
		if err := s.member(key, depth+1); err != nil {
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

// Keys of the payload the scanner keeps.
const (
	memberOtherKey = iota
	memberTypeKey
	memberDeltaKey
	memberErrorKey
)

// key reads the key at s.i and says which kept member it names.
func (s *scanner) key() (int, error) {
	start := s.i + 1
	end, plain, err := s.scanString()
	if err != nil {
		return 0, err
	}
	k := s.b[start:end]
	if !plain {
		s.scratch = unquote(s.scratch[:0], k)
		k = s.scratch
	}
	switch string(k) {
	case "type":
		return memberTypeKey, nil
	case "delta":
		return memberDeltaKey, nil
	case "error":
		return memberErrorKey, nil
	}
	return memberOtherKey, nil
}

// member scans the value of a member; the kept ones record where their
// string is, replacing an earlier occurrence.
func (s *scanner) member(key, depth int) error {
	if key == memberOtherKey {
		return s.skipValue(depth)
	}
	state := memberOther
	var start, end int
	var plain bool
	switch c := s.peek(); {
	case c == '"':
		start = s.i + 1
		var err error
		if end, plain, err = s.scanString(); err != nil {
			return err
		}
		state = memberString
	case c == 'n' && s.literal("null"):
		state = memberNull
	default:
		if err := s.skipValue(depth); err != nil {
			return err
		}
	}
	switch key {
	case memberTypeKey:
		s.typState, s.typStart, s.typEnd, s.typPlain = state, start, end, plain
	case memberDeltaKey:
		s.deltaState, s.deltaStart, s.deltaEnd, s.deltaPlain = state, start, end, plain
	case memberErrorKey:
		s.errState = state
	}
	return nil
}

// array scans the array at s.i.
func (s *scanner) array(depth int) error {
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
		if err := s.skipValue(depth + 1); err != nil {
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

// skipValue validates and skips the value at s.i.
func (s *scanner) skipValue(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.scanString()
		return err
	case c == '{':
		return s.object(depth, false)
	case c == '[':
		return s.array(depth)
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

// Byte classes inside JSON strings.
const (
	chPlain   = iota // printable ASCII other than '"' and '\\'
	chSpecial        // '"', '\\' or a control character
	chHigh           // a byte of a multibyte UTF-8 sequence (or invalid)
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

// scanString validates the string starting at s.i (a '"'), leaves s.i
// after its closing quote and returns the index of that quote. plain
// reports that the raw bytes are the decoded value: no escapes and valid
// UTF-8.
func (s *scanner) scanString() (end int, plain bool, err error) {
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

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
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

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexRune(b []byte) rune {
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

// unquote appends the decoded contents of a string scanString accepted,
// as encoding/json decodes it.
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
				r := hexRune(src[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					// A valid pair makes one rune; anything else is U+FFFD.
					if i+5 < len(src) && src[i] == '\\' && src[i+1] == 'u' && isHex(src[i+2]) && isHex(src[i+3]) && isHex(src[i+4]) && isHex(src[i+5]) {
						if dec := utf16.DecodeRune(r, hexRune(src[i+2:])); dec != utf8.RuneError {
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

// members validates the JSON value b, found at nesting depth depth, and
// calls f with each member's key and raw value when it is an object: the
// walk encoding/json makes reading b into a map[string]json.RawMessage
// (null is no members; another value is an error). The key is valid
// only during the call.
func members(b []byte, depth int, scratch *[]byte, f func(key, value []byte) error) error {
	s := scanner{b: b, scratch: *scratch}
	defer func() { *scratch = s.scratch }()
	s.ws()
	switch c := s.peek(); {
	case c == 'n' && s.literal("null"):
		s.ws()
		if s.i != len(b) {
			return s.errorf("unexpected %q after top-level value", b[s.i])
		}
		return nil
	case c != '{':
		if err := s.skipValue(depth); err != nil {
			return err
		}
		return fmt.Errorf("%w: want an object", errSyntax)
	}
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	s.i++ // '{'
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			if s.peek() != '"' {
				return s.errorf("expected object key")
			}
			start := s.i + 1
			end, plain, err := s.scanString()
			if err != nil {
				return err
			}
			s.ws()
			if s.peek() != ':' {
				return s.errorf("expected ':' after object key")
			}
			s.i++
			s.ws()
			vstart := s.i
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			key := b[start:end]
			if !plain {
				s.scratch = unquote(s.scratch[:0], key)
				key = s.scratch
			}
			if err := f(key, b[vstart:s.i]); err != nil {
				return err
			}
			s.ws()
			if s.peek() == ',' {
				s.i++
				s.ws()
				continue
			}
			if s.peek() != '}' {
				return s.errorf("expected ',' or '}' in object")
			}
			s.i++
			break
		}
	}
	s.ws()
	if s.i != len(b) {
		return s.errorf("unexpected %q after top-level value", b[s.i])
	}
	return nil
}

// elements validates the JSON value b, found at nesting depth depth, and
// calls f with each element when it is an array: the walk encoding/json
// makes reading b into a []json.RawMessage (null is no elements; another
// value is an error).
func elements(b []byte, depth int, f func(elem []byte) error) error {
	s := scanner{b: b}
	s.ws()
	switch c := s.peek(); {
	case c == 'n' && s.literal("null"):
		s.ws()
		if s.i != len(b) {
			return s.errorf("unexpected %q after top-level value", b[s.i])
		}
		return nil
	case c != '[':
		if err := s.skipValue(depth); err != nil {
			return err
		}
		return fmt.Errorf("%w: want an array", errSyntax)
	}
	if depth > maxDepth {
		return s.errorf("exceeded max depth")
	}
	s.i++ // '['
	s.ws()
	if s.peek() == ']' {
		s.i++
	} else {
		for {
			start := s.i
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			if err := f(b[start:s.i]); err != nil {
				return err
			}
			s.ws()
			if s.peek() == ',' {
				s.i++
				s.ws()
				continue
			}
			if s.peek() != ']' {
				return s.errorf("expected ',' or ']' in array")
			}
			s.i++
			break
		}
	}
	s.ws()
	if s.i != len(b) {
		return s.errorf("unexpected %q after top-level value", b[s.i])
	}
	return nil
}
