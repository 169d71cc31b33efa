// Package textcut shortens text to a byte budget without splitting a UTF-8
// encoded character: for messages and telemetry fields with a size limit,
// where half a character would turn into U+FFFD or invalid JSON.
package textcut

import "unicode/utf8"

// Prefix returns s cut to at most limit bytes, ending before the first
// character that does not fit whole.
func Prefix(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(limit, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Ellipsis returns s if it fits in limit bytes, else its Prefix followed
// by "…" so that a reader sees it was cut (the result then has up to
// limit+3 bytes).
func Ellipsis(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return Prefix(s, limit) + "…"
}
