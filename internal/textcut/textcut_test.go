package textcut_test

import (
	"testing"

	"github.com/brainwire/brainwire/internal/textcut"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s                string
		limit            int
		prefix, ellipsis string
	}{
		{"", 3, "", ""},
		{"abc", 3, "abc", "abc"},
		{"abcd", 3, "abc", "abc…"},
		{"abc", 0, "", "…"},
		{"abc", -1, "", "…"},
		{"aé", 2, "a", "a…"},  // é is two bytes: it does not fit whole
		{"aé", 3, "aé", "aé"}, // exactly fits
		{"a€b", 3, "a", "a…"}, // € is three bytes
		{"a€b", 4, "a€", "a€…"},
		{"😀😀", 5, "😀", "😀…"},
		{"😀", 3, "", "…"},
	} {
		if got := textcut.Prefix(tc.s, tc.limit); got != tc.prefix {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.prefix)
		}
		if got := textcut.Ellipsis(tc.s, tc.limit); got != tc.ellipsis {
			t.Errorf("Ellipsis(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.ellipsis)
		}
	}
}
