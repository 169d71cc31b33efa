package replay

import "github.com/pmezard/go-difflib/difflib"

// Diff returns a unified diff of two texts, line by line, with three lines
// of context, or "" when they are equal.
func Diff(want, got, wantName, gotName string) string {
	if want == got {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(want), B: difflib.SplitLines(got),
		FromFile: wantName, ToFile: gotName, Context: 3,
	})
	if err != nil {
		return "diffing: " + err.Error()
	}
	return d
}
