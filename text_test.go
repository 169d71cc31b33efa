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
		// Drawn as nothing: the null notehead and the blank Braille
		// pattern, and default ignorable code points of every kind (format
		// characters, the Hangul fillers, variation selectors, the
		// combining grapheme joiner, Khmer inherent vowels, tags, and code
		// points reserved as ignorable).
		{"\U0001d159", "no visible characters"},
		{"\U0001d159 \U0001d159\u2800\u3164", "no visible characters"},
		{"\u180e\u2061\u206a\U0001d173\U0001bca0", "no visible characters"},
		{"\ufe0f\U000e0100\u034f\u17b4\u17b5", "no visible characters"},
		{"\U000e0001\U000e0041\U000e007f", "no visible characters"},
		{"\u2065\ufff0\U000e0fff", "no visible characters"},
		{"\uffff\ufdd0", "no visible characters"}, // noncharacters
		{"\U0001d158", ""}, // a notehead that is drawn
		// Format characters Unicode wants shown, a private-use character
		// (fonts draw one) and a character newer than Go's tables (🫩,
		// Unicode 16) are visible.
		{"\u0600", ""},
		{"\uf8ff", ""},
		{"\U0001fae9", ""},
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
