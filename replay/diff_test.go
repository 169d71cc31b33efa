package replay_test

import (
	"testing"

	"github.com/brainwire/brainwire/replay"
)

func TestDiff(t *testing.T) {
	want := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	got := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk"
	d := replay.Diff(want, got, "golden", "replay")
	const expect = `--- golden
+++ replay
@@ -1,10 +1,11 @@
 a
 b
 c
-d
+D
 e
 f
 g
 h
 i
 j
+k⏎ (no newline at end)
`
	if d != expect {
		t.Errorf("diff:\n%s\nwant:\n%s", d, expect)
	}
	if replay.Diff("same\n", "same\n", "a", "b") != "" {
		t.Error("equal texts have a diff")
	}
}
