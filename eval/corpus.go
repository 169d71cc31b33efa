package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
)

// Limits of a corpus.
const (
	MaxCases      = 10000
	MaxLineBytes  = 64 << 10
	MaxTextLength = 10000 // characters, as the capture API takes them
)

// Case is one labelled capture.
type Case struct {
	// ID names the case in reports; its line number ("L12") when the
	// corpus gives none.
	ID   string `json:"id,omitempty"`
	Text string `json:"text"`
	// ExpectedBucket is where the capture belongs; it may be empty only
	// when ExpectedOutcome puts the capture in no bucket.
	ExpectedBucket string `json:"expected_bucket,omitempty"`
	// ExpectedOutcome, when set, is the outcome the capture must end with.
	ExpectedOutcome brainwire.Outcome `json:"expected_outcome,omitempty"`
	// Meta is kept as it is and not read.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// Correct reports whether a capture that ended with outcome, filed in
// bucket, is what the case expects.
func (c Case) Correct(outcome brainwire.Outcome, bucket string) bool {
	if c.ExpectedOutcome != "" {
		if outcome != c.ExpectedOutcome {
			return false
		}
		if !c.ExpectedOutcome.Resolved() {
			return true
		}
	}
	return outcome.Resolved() && bucket == c.ExpectedBucket
}

// ReadCorpus reads a JSONL corpus. Blank lines are skipped; anything else
// that is not a valid case is an error naming its line: malformed JSON,
// unknown fields, an empty or oversized text, an unknown bucket or
// outcome, a missing bucket, a duplicate id, an oversized line.
func ReadCorpus(r io.Reader) ([]Case, error) {
	var cases []Case
	ids := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxLineBytes+2) // the line's end too
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c, perr := parseCase(line)
		if perr != nil {
			return nil, fmt.Errorf("line %d: %w", n, perr)
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("L%d", n)
		}
		if prev, dup := ids[c.ID]; dup {
			return nil, fmt.Errorf("line %d: id %q is already line %d's", n, c.ID, prev)
		}
		ids[c.ID] = n
		if len(cases) == MaxCases {
			return nil, fmt.Errorf("line %d: more than %d cases", n, MaxCases)
		}
		cases = append(cases, c)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, MaxLineBytes)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the corpus: %w", err)
	}
	if len(cases) == 0 {
		return nil, errors.New("the corpus has no cases")
	}
	return cases, nil
}

func parseCase(line []byte) (Case, error) {
	var c Case
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Case{}, fmt.Errorf("not a case: %w", err)
	}
	if dec.More() {
		return Case{}, errors.New("more than one JSON value")
	}
	c.Text = strings.TrimSpace(c.Text)
	switch {
	case c.Text == "":
		return Case{}, errors.New("text is empty")
	case utf8.RuneCountInString(c.Text) > MaxTextLength:
		return Case{}, fmt.Errorf("text is over %d characters", MaxTextLength)
	case c.ExpectedOutcome != "" && !slices.Contains(brainwire.Outcomes, c.ExpectedOutcome):
		return Case{}, fmt.Errorf("unknown expected_outcome %q (want one of %v)", c.ExpectedOutcome, brainwire.Outcomes)
	case c.ExpectedBucket != "" && !brainwire.ValidBucket(c.ExpectedBucket):
		return Case{}, fmt.Errorf("unknown expected_bucket %q (want one of %v)", c.ExpectedBucket, brainwire.Buckets)
	case c.ExpectedBucket == "" && (c.ExpectedOutcome == "" || c.ExpectedOutcome.Resolved()):
		return Case{}, errors.New("expected_bucket is required unless expected_outcome puts the capture in no bucket")
	case len(c.ID) > 128:
		return Case{}, errors.New("id is over 128 characters")
	}
	return c, nil
}

// WriteCorpus writes cases as JSON Lines.
func WriteCorpus(w io.Writer, cases []Case) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("writing case %s: %w", c.ID, err)
		}
	}
	return nil
}
