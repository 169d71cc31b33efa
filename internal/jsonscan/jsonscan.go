// Package jsonscan walks a JSON document in a byte slice without building
// it, for decoders on the per-event hot path: the caller reads the members
// it wants and skips the rest, which are validated but never allocated.
//
// A Scanner accepts exactly the documents encoding/json accepts (within
// its depth limit): a document read to its end without an error is one
// encoding/json would decode. Strings are handed out raw, with a flag
// saying whether the raw bytes are already the decoded value; Unquote
// decodes the others the way encoding/json does (invalid UTF-8 and lone
// surrogates become U+FFFD).
package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// DefaultMaxDepth is encoding/json's nesting limit.
const DefaultMaxDepth = 10000

// ErrSyntax is wrapped by every error about the document itself.
var ErrSyntax = errors.New("jsonscan: invalid JSON")

// ErrType is returned when a value is valid JSON but not of the type asked
// for (Bool on a string, Int64 on 1.5, ...).
var ErrType = errors.New("jsonscan: unexpected type")

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

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// Scanner reads one document. The zero value scans an empty document; use
// Reset to give it one. It is not safe for concurrent use.
type Scanner struct {
	b     []byte
	i     int
	depth int
	// MaxDepth bounds nesting; 0 means DefaultMaxDepth. A lower limit
	// makes deeper documents an error, never a wrong result.
	MaxDepth int
}

// Reset starts scanning b from its beginning.
func (s *Scanner) Reset(b []byte) {
	s.b, s.i, s.depth = b, 0, 0
}

// Pos is the offset of the cursor in the document.
func (s *Scanner) Pos() int { return s.i }

// Seek moves the cursor to offset i of the document, for a caller that
// matched a known layout byte by byte up to a value and hands the value
// over (the depth stays what it was).
func (s *Scanner) Seek(i int) { s.i = min(max(i, 0), len(s.b)) }

func (s *Scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, s.i, fmt.Sprintf(format, args...))
}

// Peek skips whitespace and returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	for s.i < len(s.b) && isSpace[s.b[s.i]] {
		s.i++
	}
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// End skips trailing whitespace and reports an error unless the document
// ends there.
func (s *Scanner) End() error {
	if s.Peek(); s.i != len(s.b) {
		return s.errorf("unexpected %q after top-level value", s.b[s.i])
	}
	return nil
}

func (s *Scanner) enter() error {
	s.depth++
	limit := s.MaxDepth
	if limit <= 0 {
		limit = DefaultMaxDepth
	}
	if s.depth > limit {
		return s.errorf("exceeded max depth")
	}
	return nil
}

// Object reads the object at the cursor. For each member it calls each
// with the key and leaves the cursor before the member's value (perhaps
// on whitespace), which each must read or Skip. The key is raw (plain reports that it needs no unquoting)
// and valid until the next string is read. A value other than an object is
// ErrType, left unread.
func (s *Scanner) Object(each func(key []byte, plain bool) error) error {
	if s.Peek() != '{' {
		return ErrType
	}
	if err := s.enter(); err != nil {
		return err
	}
	s.i++
	if s.Peek() == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if s.Peek() != '"' {
			return s.errorf("expected object key")
		}
		key, plain, err := s.scanString()
		if err != nil {
			return err
		}
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			if s.Peek() != ':' {
				return s.errorf("expected ':' after object key")
			}
		}
		s.i++
		if err := each(key, plain); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.errorf("expected ',' or '}' in object")
		}
	}
}

// Array reads the array at the cursor, calling each with the cursor on
// every element, which each must read or Skip. A value other than an
// array is ErrType, left unread.
func (s *Scanner) Array(each func() error) error {
	if s.Peek() != '[' {
		return ErrType
	}
	if err := s.enter(); err != nil {
		return err
	}
	s.i++
	if s.Peek() == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.Peek()
		if err := each(); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return s.errorf("expected ',' or ']' in array")
		}
	}
}

// String reads the string at the cursor and returns its raw contents,
// without the quotes. plain reports that the raw bytes are the decoded
// value (no escapes, valid UTF-8); otherwise decode them with Unquote. The
// result aliases the document. A value other than a string is ErrType.
func (s *Scanner) String() (raw []byte, plain bool, err error) {
	if s.Peek() != '"' {
		return nil, false, ErrType
	}
	return s.scanString()
}

// scanString reads the string starting at the cursor, a '"'.
func (s *Scanner) scanString() (raw []byte, plain bool, err error) {
	b := s.b
	start := s.i + 1
	j := start
	plain = true
	high := false
	for {
		j = plainRun(b, j)
		if j >= len(b) {
			s.i = j
			return nil, false, s.errorf("unterminated string")
		}
		switch c := b[j]; {
		case c == '"':
			if high && plain && !utf8.Valid(b[start:j]) {
				plain = false
			}
			s.i = j + 1
			return b[start:j], plain, nil
		case c == '\\':
			plain = false
			j++
			if j >= len(b) {
				s.i = j
				return nil, false, s.errorf("unterminated string")
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+4 >= len(b) || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					s.i = j
					return nil, false, s.errorf("invalid \\u escape")
				}
				j += 5
			default:
				s.i = j
				return nil, false, s.errorf("invalid escape %q", b[j])
			}
		case c < 0x20:
			s.i = j
			return nil, false, s.errorf("control character %#x in string", c)
		default: // chHigh
			high = true
			j++
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainRun returns the index of the first byte of b at or after j that is
// not a plain string byte ('"', '\\', a control character or a non-ASCII
// byte), or len(b). It reads eight bytes at a time.
func plainRun(b []byte, j int) int {
	for j+8 <= len(b) {
		if m := special8(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(b) && strClass[b[j]] == chPlain {
		j++
	}
	return j
}

// special8 flags, in the top bit of each byte of x, the bytes that are not
// plain string bytes. Borrows only run upward, so the lowest flag is
// exact (higher ones may be spurious): it marks the first such byte.
func special8(x uint64) uint64 {
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	control := (x - 0x20*ones) & ^x & highs // a byte below 0x20
	return (x & highs) | control | hasZero(x^('"'*ones)) | hasZero(x^('\\'*ones))
}

// Bool reads true or false. Any other value is ErrType, left unread.
func (s *Scanner) Bool() (bool, error) {
	switch s.Peek() {
	case 't':
		if s.literal("true") {
			return true, nil
		}
	case 'f':
		if s.literal("false") {
			return false, nil
		}
	}
	return false, ErrType
}

// Null reads null and reports whether it was there.
func (s *Scanner) Null() bool {
	return s.Peek() == 'n' && s.literal("null")
}

// Int64 reads a number that encoding/json would store in an int64: an
// integer literal in range. Any other number is ErrType (read); any other
// value is ErrType, left unread.
func (s *Scanner) Int64() (int64, error) {
	c := s.Peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, ErrType
	}
	start := s.i
	if err := s.number(); err != nil {
		return 0, err
	}
	lit := s.b[start:s.i]
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	var n uint64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, ErrType // a fraction or an exponent
		}
		if n > (1<<63)/10 {
			return 0, ErrType
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), nil
	case !neg && n < 1<<63:
		return int64(n), nil
	}
	return 0, ErrType
}

// Skip validates and skips the value at the cursor.
func (s *Scanner) Skip() error {
	switch c := s.Peek(); {
	case c == '"':
		_, _, err := s.scanString()
		return err
	case c == '{':
		return s.Object(func([]byte, bool) error { return s.Skip() })
	case c == '[':
		return s.Array(s.Skip)
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

// Literal skips whitespace and consumes lit if the input continues with
// it: a shortcut past a value that is nearly always the same. lit must be
// one complete, valid JSON value, so the document stays validated; its
// nesting does not count against MaxDepth.
func (s *Scanner) Literal(lit string) bool {
	s.Peek()
	return s.literal(lit)
}

// literal consumes lit if the input continues with it.
func (s *Scanner) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() error {
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

// Unquote appends to dst the decoded contents of a string String returned
// (raw, not plain), the way encoding/json decodes it.
func Unquote(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			i++
			switch raw[i] {
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
				r := hexVal(raw[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+5 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' && isHex(raw[i+2]) && isHex(raw[i+3]) && isHex(raw[i+4]) && isHex(raw[i+5]) {
						if dec := utf16.DecodeRune(r, hexVal(raw[i+2:])); dec != utf8.RuneError {
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
				dst = append(dst, raw[i])
			}
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}
