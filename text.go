package brainwire

import (
	"unicode"
	"unicode/utf8"
)

// CheckText checks what a person typed before anything is stored: EInvalid
// when s is not valid UTF-8 or carries U+FFFD (what a decoder makes of
// bytes that were not), has control characters other than tab, line feed
// and carriage return, or has nothing visible in it (only spaces and
// zero-width or other format characters). field names the text in the
// message.
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
		case unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S):
			visible = true
		}
	}
	if !visible {
		return Errorf(EInvalid, "%s has no visible characters", field)
	}
	return nil
}
