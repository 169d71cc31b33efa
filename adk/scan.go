package adk

import (
	"errors"
	"unicode/utf8"

	"github.com/brainwire/brainwire/internal/jsonscan"
)

// Nearly every event of a stream is a streamed chunk of text or thought:
// {"modelVersion":…,"content":{"parts":[{"text":"…","thought":true}],
// "role":"model"},"partial":true,…,"invocationId":"e-…","author":"…",
// "actions":{…},"nodeInfo":{…},"id":"…","timestamp":…}. fastDecoder
// reads those with jsonscan instead of encoding/json: it walks the members
// decodeJSON reads, validates everything else without building it, and
// allocates only the text (the ids and the author repeat from event to
// event and are reused).
//
// It declines, leaving the document to decodeJSON, whenever it is not sure
// to decode exactly what encoding/json would: a function call or response,
// an error, long-running ids, a null where a value is read, a member given
// twice, an escaped or non-ASCII key, a key that only differs in case from
// one decodeJSON reads (encoding/json matches keys case-insensitively).

// emptyActions is the actions member of nearly every event, read at once.
const emptyActions = `{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}}`

// fastMaxDepth bounds nesting on the fast path; deeper documents are left
// to encoding/json.
const fastMaxDepth = 64

// errDecline stops the walk: the document goes to decodeJSON.
var errDecline = errors.New("adk: left to encoding/json")

// knownKeys are the members decodeJSON reads, per object, as wireEvent's
// json tags name them (a test holds the two lists together).
var knownKeys = map[string][]string{
	"event":   {"content", "partial", "invocationId", "author", "longRunningToolIds", "errorCode", "errorMessage", "usageMetadata", "actions", "error", "error_details"},
	"content": {"role", "parts"},
	"part":    {"text", "thought", "functionCall", "functionResponse"},
	"usage":   {"promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "totalTokenCount"},
	"actions": {"skipSummarization"},
}

var (
	eventKeys   = newKeySet(knownKeys["event"])
	contentKeys = newKeySet(knownKeys["content"])
	partKeys    = newKeySet(knownKeys["part"])
	usageKeys   = newKeySet(knownKeys["usage"])
	actionKeys  = newKeySet(knownKeys["actions"])
)

// keySet is the member names of one object decodeJSON reads, with their
// lengths as a bit set, so most other keys are told apart at once.
type keySet struct {
	names []string
	lens  uint64 // bit n: a name of n bytes (n < 64)
}

func newKeySet(names []string) keySet {
	k := keySet{names: names}
	for _, n := range names {
		k.lens |= 1 << len(n)
	}
	return k
}

type fastDecoder struct {
	sc      jsonscan.Scanner
	ev      Event
	parts   []Part // reused: an event's Parts are valid until the next decode
	scratch []byte

	// The last values seen, handed out again when they repeat.
	invocation, author, role string

	seen, seenContent, seenPart, seenUsage uint16
}

// decode reads data, or reports false when it declines.
func (d *fastDecoder) decode(data []byte) (Event, bool) {
	d.sc.Reset(data)
	d.sc.MaxDepth = fastMaxDepth
	d.ev = Event{}
	d.parts = d.parts[:0]
	if d.layout() {
		ev := d.ev
		ev.Parts = d.parts
		return ev, true
	}
	d.sc.Reset(data)
	d.ev = Event{}
	d.parts = d.parts[:0]
	d.seen = 0
	if d.sc.Object(d.eventMember) != nil || d.sc.End() != nil {
		return Event{}, false
	}
	ev := d.ev
	if len(d.parts) > 0 {
		ev.Parts = d.parts
	}
	return ev, true
}

// The layout of a streamed chunk as ADK 2.x writes it, member for member;
// in between are values layout reads or skips.
const (
	layoutHead    = `{"modelVersion":`
	layoutContent = `,"content":{"parts":[{"text":`
	layoutThought = `,"thought":true`
	layoutPartial = `}],"role":"model"},"partial":true,"invocationId":`
	layoutAuthor  = `,"author":`
	layoutActions = `,"actions":` + emptyActions
	layoutNode    = `,"nodeInfo":{"path":`
	layoutID      = `,"id":`
	layoutTime    = `,"timestamp":`
)

// layout reads a chunk in exactly the layout above: the literal runs are
// compared as bytes and the values between them validated, so what it
// accepts is valid JSON with each member once, under its exact name. It
// reports false, for decode's general walk, on any other layout (usage
// or a finish reason on the chunk, a signature on the part, older
// servers' member sets).
func (d *fastDecoder) layout() bool {
	sc := &d.sc
	if !sc.Literal(layoutHead) || sc.Skip() != nil || !sc.Literal(layoutContent) {
		return false
	}
	raw, plain, err := sc.String()
	if err != nil {
		return false
	}
	thought := sc.Literal(layoutThought)
	if !sc.Literal(layoutPartial) {
		return false
	}
	inv, err := d.str(&d.invocation)
	if err != nil || !sc.Literal(layoutAuthor) {
		return false
	}
	author, err := d.str(&d.author)
	if err != nil || !sc.Literal(layoutActions) {
		return false
	}
	if sc.Literal(layoutNode) && (sc.Skip() != nil || !sc.Literal("}")) {
		return false
	}
	if !sc.Literal(layoutID) || sc.Skip() != nil || !sc.Literal(layoutTime) || sc.Skip() != nil || !sc.Literal("}") || sc.End() != nil {
		return false
	}
	if !plain {
		d.scratch = jsonscan.Unquote(d.scratch[:0], raw)
		raw = d.scratch
	}
	if d.role != "model" {
		d.role = "model"
	}
	d.parts = append(d.parts, Part{Text: string(raw), Thought: thought})
	d.ev = Event{InvocationID: inv, Author: author, Partial: true, Role: d.role}
	return true
}

// once marks member bit of an object as read; a member given twice
// declines (encoding/json would merge or replace, which is not worth
// mimicking).
func once(seen *uint16, bit uint16) error {
	if *seen&bit != 0 {
		return errDecline
	}
	*seen |= bit
	return nil
}

// other skips an unknown member, unless encoding/json could take it for a
// known one.
func (d *fastDecoder) other(key []byte, known keySet) error {
	if mayFold(key, known) {
		return errDecline
	}
	return d.sc.Skip()
}

// mayFold reports whether encoding/json might match key to one of the
// known names: it folds case, including non-ASCII letters that fold to
// ASCII ones (the Kelvin sign to k), so a key with a non-ASCII byte may
// match a name of another length.
func mayFold(key []byte, known keySet) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	if len(key) >= 64 || known.lens&(1<<len(key)) == 0 {
		return false
	}
	for _, n := range known.names {
		if len(n) == len(key) && equalFoldASCII(key, n) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a []byte, b string) bool {
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (d *fastDecoder) eventMember(key []byte, plain bool) error {
	if !plain {
		return errDecline
	}
	var err error
	switch string(key) {
	case "content":
		if err = once(&d.seen, 1<<0); err == nil {
			d.seenContent = 0
			err = d.sc.Object(d.contentMember)
		}
	case "partial":
		if err = once(&d.seen, 1<<1); err == nil {
			d.ev.Partial, err = d.sc.Bool()
		}
	case "invocationId":
		if err = once(&d.seen, 1<<2); err == nil {
			d.ev.InvocationID, err = d.str(&d.invocation)
		}
	case "author":
		if err = once(&d.seen, 1<<3); err == nil {
			d.ev.Author, err = d.str(&d.author)
		}
	case "usageMetadata":
		if err = once(&d.seen, 1<<4); err == nil {
			d.ev.HasUsage = true
			d.seenUsage = 0
			err = d.sc.Object(d.usageMember)
		}
	case "actions":
		if err = once(&d.seen, 1<<5); err == nil {
			if !d.sc.Literal(emptyActions) {
				err = d.sc.Object(d.actionsMember)
			}
		}
	case "longRunningToolIds", "errorCode", "errorMessage", "error", "error_details":
		return errDecline
	default:
		return d.other(key, eventKeys)
	}
	if err != nil {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) contentMember(key []byte, plain bool) error {
	if !plain {
		return errDecline
	}
	var err error
	switch string(key) {
	case "role":
		if err = once(&d.seenContent, 1<<0); err == nil {
			d.ev.Role, err = d.str(&d.role)
		}
	case "parts":
		if err = once(&d.seenContent, 1<<1); err == nil {
			err = d.sc.Array(d.partElement)
		}
	default:
		return d.other(key, contentKeys)
	}
	if err != nil {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) partElement() error {
	d.parts = append(d.parts, Part{})
	d.seenPart = 0
	if d.sc.Object(d.partMember) != nil {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) partMember(key []byte, plain bool) error {
	if !plain {
		return errDecline
	}
	p := &d.parts[len(d.parts)-1]
	var err error
	switch string(key) {
	case "text":
		if err = once(&d.seenPart, 1<<0); err == nil {
			var raw []byte
			var plainText bool
			if raw, plainText, err = d.sc.String(); err == nil {
				if !plainText {
					d.scratch = jsonscan.Unquote(d.scratch[:0], raw)
					raw = d.scratch
				}
				p.Text = string(raw)
			}
		}
	case "thought":
		if err = once(&d.seenPart, 1<<1); err == nil {
			p.Thought, err = d.sc.Bool()
		}
	case "functionCall", "functionResponse":
		return errDecline
	default:
		return d.other(key, partKeys)
	}
	if err != nil {
		return errDecline
	}
	return nil
}

func (d *fastDecoder) usageMember(key []byte, plain bool) error {
	if !plain {
		return errDecline
	}
	var dst *int64
	var bit uint16
	switch string(key) {
	case "promptTokenCount":
		dst, bit = &d.ev.Usage.PromptTokens, 1<<0
	case "candidatesTokenCount":
		dst, bit = &d.ev.Usage.CandidatesTokens, 1<<1
	case "thoughtsTokenCount":
		dst, bit = &d.ev.Usage.ThoughtsTokens, 1<<2
	case "totalTokenCount":
		dst, bit = &d.ev.Usage.TotalTokens, 1<<3
	default:
		return d.other(key, usageKeys)
	}
	if once(&d.seenUsage, bit) != nil {
		return errDecline
	}
	n, err := d.sc.Int64()
	if err != nil {
		return errDecline
	}
	*dst = n
	return nil
}

func (d *fastDecoder) actionsMember(key []byte, plain bool) error {
	if !plain {
		return errDecline
	}
	if string(key) == "skipSummarization" {
		return errDecline
	}
	return d.other(key, actionKeys)
}

// str reads a string, handing out *last again when it is the same.
func (d *fastDecoder) str(last *string) (string, error) {
	raw, plain, err := d.sc.String()
	if err != nil {
		return "", err
	}
	if !plain {
		d.scratch = jsonscan.Unquote(d.scratch[:0], raw)
		raw = d.scratch
	}
	if string(raw) != *last {
		*last = string(raw)
	}
	return *last, nil
}
