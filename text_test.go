package brainwire_test

import (
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		text string
		want string // "" when the text is accepted
	}{
		{"Call mom", ""},
		{"tab\tand\r\nline breaks\n", ""},
		{"🎉", ""},
		{"李明", ""},
		{"42", ""},
		{"?", ""},
		{"a\u200bb", ""}, // a zero-width space inside visible text is the person's
		{"", "no visible characters"},
		{" \t\n", "no visible characters"},
		{"\u00a0\u3000", "no visible characters"},
		{"\u200b", "no visible characters"},
		{"\u0301", "no visible characters"},
		{"\u3164\u3164", "no visible characters"},
		{"\uffa0", "no visible characters"},
		{"\u115f", "no visible characters"},
		{"\u1160", "no visible characters"},
		{"\u2800", "no visible characters"},
		{"\u200c\u200d\u2060\ufeff", "no visible characters"},
		{"\u3164a", ""},
		{"\u2801", ""}, // a Braille dot is visible
		{"bad \xff", "not valid UTF-8"},
		{"\ufffd", "U+FFFD"},
		{"a\x00b", "U+0000"},
		{"a\x0bb", "U+000B"},
		{"a\u009bb", "U+009B"},
	} {
		err := brainwire.CheckText("text", c.text)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.text, err)
		case c.want != "" && (brainwire.ErrorCode(err) != brainwire.EInvalid || !strings.Contains(brainwire.ErrorMessage(err), c.want)):
			t.Errorf("%q: %v, want EInvalid with %q", c.text, err, c.want)
		}
	}
}
