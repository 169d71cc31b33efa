package brainwire

import (
	"unicode"
	"unicode/utf8"
)

// CheckText checks what a person typed before anything is stored: EInvalid
// when s is not valid UTF-8 or carries U+FFFD (what a decoder makes of
// bytes that were not), has control characters other than tab, line feed
// and carriage return, or has nothing visible in it: only white space,
// format characters (zero-width spaces and joiners, U+2060, U+FEFF),
// combining marks without a base, and the letters and symbols fonts draw
// as blanks (the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, and the
// blank Braille pattern U+2800). field names the text in the message. Every
// capture route checks its text here.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return Errorf(EInvalid, "%s is not valid UTF-8", field)
	}
	visible := false
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return Errorf(EInvalid, "%s contains U+FFFD at byte %d: it was not valid Unicode text", field, i)
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.IsControl(r):
			return Errorf(EInvalid, "%s contains the control character U+%04X at byte %d", field, r, i)
		case blank(r):
		case unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S):
			visible = true
		}
	}
	if !visible {
		return Errorf(EInvalid, "%s has no visible characters", field)
	}
	return nil
}

// blank reports whether r is a letter or symbol that is drawn as nothing:
// the Hangul fillers and the empty Braille pattern, which Unicode classes
// as letters (Lo) and a symbol (So) but which show as blank space.
func blank(r rune) bool {
	switch r {
	case '\u115f', '\u1160', '\u3164', '\uffa0', '\u2800':
		return true
	}
	return false
}
