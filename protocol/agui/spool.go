package agui

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
)

// Spool is where ReadInput writes the inline audio it decodes, one audio
// value after another; the Input's Audio reads its part back. A file
// keeps the audio out of memory; a MemSpool keeps it in.
type Spool interface {
	io.Writer
	io.ReaderAt
}

// MemSpool is a Spool in memory, for bodies that are small anyway.
type MemSpool struct{ b []byte }

// Write implements io.Writer.
func (m *MemSpool) Write(p []byte) (int, error) {
	m.b = append(m.b, p...)
	return len(p), nil
}

// ReadAt implements io.ReaderAt.
func (m *MemSpool) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.b).ReadAt(p, off)
}

// Limits bound what ReadInput takes; 0 is no limit.
type Limits struct {
	// JSON bounds the input's bytes besides its audio values: the
	// conversation, held in memory to be parsed.
	JSON int64
	// Audio bounds the decoded bytes of the audio a capture takes; a
	// larger one is refused if it is the capture's.
	Audio int64
}

// ReadError is a failure to read the input, not a malformed one: the
// caller knows what its reader's errors mean (a deadline, a size limit).
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "reading the RunAgentInput: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// ReadInput reads a RunAgentInput from r as it arrives. The value of
// every messages[].content[].source (the inline data of a content part)
// is decoded from base64 into spool as it is read, never held whole; the
// rest of the input, at most lim.JSON bytes, is then parsed as ParseInput
// does. Errors are those of ParseInput, EInvalid or ETooLarge; a *ReadError
// when r fails; or the spool's.
func ReadInput(r io.Reader, spool Spool, lim Limits) (Input, error) {
	sp := &spooler{r: bufio.NewReaderSize(r, 32<<10), spool: spool, lim: lim}
	if err := sp.run(); err != nil {
		return Input{}, err
	}
	return parse(sp.out.Bytes(), spoolTable{spool: spool, values: sp.spooled})
}

// spooled is one audio value as ReadInput left it in the spool.
type spooled struct {
	off, n int64
	err    error // why it cannot be the capture's audio, if it cannot
}

// spoolRef is how the parsed input names a spooled value, in place of the
// base64: '#' is not a base64 character, so no value is mistaken for one.
func spoolRef(i int) string { return "#" + strconv.Itoa(i) }

// maxDepth bounds nesting as encoding/json does, so that a body of
// brackets cannot grow the stack.
const maxDepth = 10000

// spooler copies a JSON text to out, all but the audio values, which it
// spools. It follows the text's nesting and keys, as far as it takes to
// know where a value is, and no further: encoding/json, parsing out,
// judges the rest. Keys match as encoding/json matches them, without
// regard to case.
type spooler struct {
	r       *bufio.Reader
	out     bytes.Buffer
	spool   Spool
	lim     Limits
	spooled []spooled
	off     int64 // bytes written to spool
	refs    int64 // bytes of out that are references to the spool
}

// container is an object or an array the spooler is in.
type container struct {
	object bool
	at     place  // where the container is
	key    string // in an object, the member being read
}

// Where a value is, for the spooler.
type place uint8

const (
	atOther    place = iota
	atRoot           // the input
	atMessages       // the messages array
	atMessage        // one of its objects
	atContent        // a message's content
	atPart           // one of its parts
	atSource         // a part's source
	atAudio          // a source's value
)

// run copies the text to out, spooling the audio values.
func (s *spooler) run() error {
	var stack []container
	key := false // the next string is an object's key
	for {
		b, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &ReadError{err}
		}
		switch b {
		case '{', '[':
			if len(stack) == maxDepth {
				return s.syntax("exceeded max depth")
			}
			stack = append(stack, container{object: b == '{', at: where(stack)})
			key = b == '{'
		case '}', ']':
			stack = stack[:max(len(stack)-1, 0)]
			key = false
		case ',':
			key = len(stack) > 0 && stack[len(stack)-1].object
		case ':':
			key = false
		case '"':
			start := s.out.Len()
			switch {
			case key:
				if err := s.copyString(); err != nil {
					return err
				}
				var k string
				_ = json.Unmarshal(s.out.Bytes()[start:], &k) // a malformed key fails the parse
				stack[len(stack)-1].key = k
			case where(stack) == atAudio:
				if err := s.spoolValue(); err != nil {
					return err
				}
			default:
				if err := s.copyString(); err != nil {
					return err
				}
			}
			continue
		}
		if err := s.put(b); err != nil {
			return err
		}
	}
}

// where is where the next value inside the innermost container is.
func where(stack []container) place {
	if len(stack) == 0 {
		return atRoot
	}
	c := stack[len(stack)-1]
	switch {
	case !c.object && c.at == atMessages:
		return atMessage
	case !c.object && c.at == atContent:
		return atPart
	case !c.object:
		return atOther
	case c.at == atRoot && strings.EqualFold(c.key, "messages"):
		return atMessages
	case c.at == atMessage && strings.EqualFold(c.key, "content"):
		return atContent
	case c.at == atPart && strings.EqualFold(c.key, "source"):
		return atSource
	case c.at == atSource && strings.EqualFold(c.key, "value"):
		return atAudio
	}
	return atOther
}

// next reads one byte; the end of the input is a syntax error.
func (s *spooler) next() (byte, error) {
	b, err := s.r.ReadByte()
	if errors.Is(err, io.EOF) {
		return 0, s.syntax("unexpected end of JSON input")
	}
	if err != nil {
		return 0, &ReadError{err}
	}
	return b, nil
}

func (s *spooler) syntax(what string) error {
	return invalid("malformed RunAgentInput: %s", what)
}

// put appends to out within the conversation's limit.
func (s *spooler) put(p ...byte) error {
	s.out.Write(p)
	if s.lim.JSON > 0 && int64(s.out.Len())-s.refs > s.lim.JSON {
		return s.tooLarge()
	}
	return nil
}

// tooLarge refuses a conversation over its limit. The rest of the input
// is read first, and let go: when the whole is over the reader's own
// limit too, that is the answer, as it would be had the audio come last.
func (s *spooler) tooLarge() error {
	if _, err := io.Copy(io.Discard, s.r); err != nil {
		return &ReadError{err}
	}
	return brainwire.Errorf(brainwire.ETooLarge, "the RunAgentInput is over %d bytes besides its audio", s.lim.JSON)
}

// copyString copies a string, its opening quote read, with its escapes as
// they are.
func (s *spooler) copyString() error {
	if err := s.put('"'); err != nil {
		return err
	}
	for {
		b, err := s.next()
		if err != nil {
			return err
		}
		if err := s.put(b); err != nil {
			return err
		}
		switch b {
		case '"':
			return nil
		case '\\':
			c, err := s.next()
			if err != nil {
				return err
			}
			if err := s.put(c); err != nil {
				return err
			}
		}
	}
}

// spoolValue decodes an audio value, its opening quote read, into the
// spool as it arrives and writes its reference in its place.
func (s *spooler) spoolValue() error {
	sp := spooled{off: s.off}
	str := &stringReader{s: s}
	dst := &limitedWriter{w: s.spool, n: s.lim.Audio}
	_, err := io.Copy(dst, base64.NewDecoder(base64.RawStdEncoding, unpadded{str}))
	sp.n = dst.written
	s.off += dst.written
	switch {
	case str.err != nil:
		return str.err
	case dst.err != nil && !errors.Is(dst.err, errAudioTooLarge):
		return fmt.Errorf("spooling the inline audio: %w", dst.err)
	case errors.Is(dst.err, errAudioTooLarge):
		sp.err = brainwire.Errorf(brainwire.ETooLarge, "audio is over %d bytes", s.lim.Audio)
	case err != nil:
		sp.err = invalid("audio data is not base64")
	}
	// What the decoder left of the string.
	if _, err := io.Copy(io.Discard, str); err != nil {
		return err
	}
	s.spooled = append(s.spooled, sp)
	ref := strconv.Quote(spoolRef(len(s.spooled) - 1))
	s.refs += int64(len(ref))
	return s.put([]byte(ref)...)
}

// errAudioTooLarge stops an audio value past its limit.
var errAudioTooLarge = errors.New("audio over its limit")

// limitedWriter writes up to n bytes (0: any number), then refuses.
type limitedWriter struct {
	w       io.Writer
	n       int64
	written int64
	err     error
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.n > 0 && l.written+int64(len(p)) > l.n {
		l.err = errAudioTooLarge
		return 0, l.err
	}
	n, err := l.w.Write(p)
	l.written += int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

// stringReader reads the rest of a JSON string, its opening quote read,
// unescaped, up to its closing quote.
type stringReader struct {
	s   *spooler
	end bool
	err error // a read or syntax error: the whole input fails
}

func (r *stringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !r.end && r.err == nil {
		// Plain bytes a buffer at a time, up to a quote or an escape.
		if buf, _ := r.s.r.Peek(max(1, r.s.r.Buffered())); len(buf) > 0 {
			i := bytes.IndexAny(buf, `"\`)
			if i < 0 {
				i = len(buf)
			}
			if i > 0 {
				m := copy(p[n:], buf[:i])
				_, _ = r.s.r.Discard(m)
				n += m
				continue
			}
		}
		b, err := r.s.next()
		if err != nil {
			r.err = err
			break
		}
		if b == '"' {
			r.end = true
			break
		}
		c, err := r.s.next()
		if err != nil {
			r.err = err
			break
		}
		switch c {
		case '"', '\\', '/':
			p[n] = c
		case 'n':
			p[n] = '\n'
		case 'r':
			p[n] = '\r'
		case 't', 'b', 'f':
			// Not base64 and not skipped by its decoder: a mark it refuses.
			p[n] = '!'
		case 'u':
			var hex [4]byte
			for i := range hex {
				if hex[i], err = r.s.next(); err != nil {
					r.err = err
					return n, r.err
				}
			}
			v, perr := strconv.ParseUint(string(hex[:]), 16, 16)
			switch {
			case perr != nil:
				r.err = r.s.syntax("invalid escape in string")
				return n, r.err
			case v < 0x80:
				p[n] = byte(v)
			default:
				p[n] = '!' // no base64 character
			}
		default:
			r.err = r.s.syntax(fmt.Sprintf("invalid character %q in string escape code", c))
			return n, r.err
		}
		n++
	}
	switch {
	case r.err != nil:
		return n, r.err
	case r.end && n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// unpadded drops base64's padding, so that one decoder takes values with
// and without it, as the service's clients send both.
type unpadded struct{ r io.Reader }

func (u unpadded) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	k := 0
	for _, c := range p[:n] {
		if c != '=' {
			p[k] = c
			k++
		}
	}
	return k, err
}
