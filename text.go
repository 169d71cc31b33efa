package brainwire

import (
	"unicode"
	"unicode/utf8"
)

// CheckText checks what a person typed before anything is stored: EInvalid
// when s is not valid UTF-8 or carries U+FFFD (what a decoder makes of
// bytes that were not), has control characters other than tab, line feed
// and carriage return, or has nothing visible in it (see visible). field
// names the text in the message. Every capture route checks its text here.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return Errorf(EInvalid, "%s is not valid UTF-8", field)
	}
	seen := false
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return Errorf(EInvalid, "%s contains U+FFFD at byte %d: it was not valid Unicode text", field, i)
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.IsControl(r):
			return Errorf(EInvalid, "%s contains the control character U+%04X at byte %d", field, r, i)
		default:
			seen = seen || visible(r)
		}
	}
	if !seen {
		return Errorf(EInvalid, "%s has no visible characters", field)
	}
	return nil
}

// visible reports whether r, not a control character, draws something
// on its own. What does not: white space, combining marks (without a base
// they have nothing to mark), default ignorable code points (zero-width
// spaces and joiners, U+FEFF, variation selectors, tags, the Hangul
// fillers, ...), noncharacters, and the blanks. Everything else does,
// code points Go's Unicode tables do not assign included: a newer Unicode
// (a new emoji) may, and a font may draw a private-use character.
func visible(r rune) bool {
	return !unicode.In(r, unicode.White_Space, unicode.M, unicode.Noncharacter_Code_Point) &&
		!defaultIgnorable(r) && !blanks[r]
}

// defaultIgnorable reports whether r has Unicode's Default_Ignorable_Code_Point
// property, derived as DerivedCoreProperties.txt defines it:
// Other_Default_Ignorable_Code_Point, format characters (Cf) and
// variation selectors, less white space, the interlinear annotation
// characters U+FFF9..U+FFFB, the Egyptian hieroglyph format controls
// U+13430..U+1343F and the prepended concatenation marks, which are
// meant to be seen.
func defaultIgnorable(r rune) bool {
	switch {
	case r >= 0xfff9 && r <= 0xfffb, r >= 0x13430 && r <= 0x1343f,
		unicode.In(r, unicode.White_Space, unicode.Prepended_Concatenation_Mark):
		return false
	}
	return unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector)
}

// blanks are the graphic characters drawn as nothing that are not default
// ignorable (the Hangul fillers, drawn as nothing too, are), which no
// Unicode property names: the Braille pattern without dots, a cell left
// empty, and the null notehead, a note drawn without its head.
var blanks = map[rune]bool{
	'\u2800':     true, // BRAILLE PATTERN BLANK (So)
	'\U0001d159': true, // MUSICAL SYMBOL NULL NOTEHEAD (So)
}
