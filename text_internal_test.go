package brainwire

import (
	"testing"
	"unicode"
)

// TestDefaultIgnorableIsUnicodes checks the derivation against the
// Default_Ignorable_Code_Point ranges DerivedCoreProperties.txt lists for
// the Unicode version of Go's tables.
func TestDefaultIgnorableIsUnicodes(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Skipf("the ranges below are Unicode 15.0.0's; Go's tables are %s", unicode.Version)
	}
	ranges := [][2]rune{
		{0x00ad, 0x00ad}, {0x034f, 0x034f}, {0x061c, 0x061c}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
		{0x180b, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x206f}, {0x3164, 0x3164},
		{0xfe00, 0xfe0f}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3},
		{0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
	}
	listed := func(r rune) bool {
		for _, rg := range ranges {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got := defaultIgnorable(r); got != listed(r) {
			t.Errorf("%U: default ignorable %v, want %v", r, got, listed(r))
		}
	}
}
