package textcut_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainwire/brainwire/internal/textcut"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},  // é is two bytes: it does not fit whole
		{"aé", 3, "aé"}, // exactly fits
		{"a€b", 3, "a"}, // € is three bytes
		{"a€b", 4, "a€"},
		{"😀😀", 5, "😀"},
		{"😀", 3, ""},
	} {
		if got := textcut.Prefix(tc.s, tc.limit); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
}

func TestEllipsis(t *testing.T) {
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 5, "short"},
		{"longer", 5, "longe…"},
		{"aé", 2, "a…"},
		{"", 0, ""},
	} {
		if got := textcut.Ellipsis(tc.s, tc.limit); got != tc.want {
			t.Errorf("Ellipsis(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
	long := strings.Repeat("é", 1000)
	got := textcut.Ellipsis(long, 301)
	if !utf8.ValidString(got) || len(got) != 300+len("…") {
		t.Errorf("Ellipsis of %d bytes of é to 301: %d bytes, valid %v", len(long), len(got), utf8.ValidString(got))
	}
}
