package cosmos

import (
	"strings"
	"testing"
	"time"
)

// FuzzDecodeCursor decodes any inbox cursor. A cursor Cosmos DB will be
// queried with must name an item and a time in the one fixed-width form
// stored times have: the query compares them as strings, so another
// spelling of the same time would page from the wrong place.
func FuzzDecodeCursor(f *testing.F) {
	at := time.Date(2026, 11, 23, 8, 30, 0, 123, time.UTC)
	for _, s := range []string{
		encodeCursor(cursor{CreatedAt: stamp(at).String(), ID: "id1"}),
		encodeCursor(cursor{CreatedAt: "2026-11-23T08:30:00Z", ID: "id1"}),
		encodeCursor(cursor{CreatedAt: stamp(at).String()}),
		// time.Parse takes a comma before the fraction.
		encodeCursor(cursor{CreatedAt: strings.Replace(stamp(at).String(), ".", ",", 1), ID: "id1"}),
		"", "!!", "e30", "bnVsbA", "eyJ0IjoxLCJpIjoiYSJ9",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			return
		}
		tm, perr := time.Parse(timeLayout, c.CreatedAt)
		if c.ID == "" || perr != nil || stamp(tm).String() != c.CreatedAt {
			t.Fatalf("%q decodes to %+v: not an item at a stored time (%v)", s, c, perr)
		}
		if again, err := decodeCursor(encodeCursor(c)); err != nil || again != c {
			t.Fatalf("%+v re-encoded decodes to %+v, %v", c, again, err)
		}
	})
}
