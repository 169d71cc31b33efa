// Package textcut shortens text for messages and telemetry without
// splitting a UTF-8 character.
package textcut

import "unicode/utf8"

// Runes returns s cut to at most max bytes at a character boundary, with
// "…" appended when anything was cut.
func Runes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
