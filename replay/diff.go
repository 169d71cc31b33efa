package replay

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines surround each change.
const diffContext = 3

// maxDiffCells bounds the work of the line diff; past it only the first
// differing line is shown.
const maxDiffCells = 8 << 20

// Diff returns a unified diff of two texts, line by line, or "" when they
// are equal. Lines show with a visible end: a trailing "⏎" marks lines
// that differ only in their line ending.
func Diff(want, got, wantName, gotName string) string {
	if want == got {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", wantName, gotName)
	if (len(a)+1)*(len(b)+1) > maxDiffCells {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		fmt.Fprintf(&out, "@@ first difference at line %d @@\n", i+1)
		if i < len(a) {
			out.WriteString("-" + show(a[i]))
		}
		if i < len(b) {
			out.WriteString("+" + show(b[i]))
		}
		return out.String()
	}
	ops := editScript(a, b)
	for _, h := range hunks(ops) {
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", h.aStart+1, h.aLen, h.bStart+1, h.bLen)
		for _, op := range ops[h.from:h.to] {
			switch op.kind {
			case ' ':
				out.WriteString(" " + show(a[op.a]))
			case '-':
				out.WriteString("-" + show(a[op.a]))
			case '+':
				out.WriteString("+" + show(b[op.b]))
			}
		}
	}
	return out.String()
}

// splitLines splits after each newline, keeping it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func show(line string) string {
	if strings.HasSuffix(line, "\n") {
		return line
	}
	return line + "⏎ (no newline at end)\n"
}

type editOp struct {
	kind byte // ' ', '-', '+'
	a, b int  // line indexes in a and b
}

// editScript is a longest-common-subsequence line diff.
func editScript(a, b []string) []editOp {
	n, m := len(a), len(b)
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []editOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, editOp{' ', i, j})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, editOp{'-', i, j})
			i++
		default:
			ops = append(ops, editOp{'+', i, j})
			j++
		}
	}
	return ops
}

type hunk struct {
	from, to     int // range of ops
	aStart, aLen int
	bStart, bLen int
}

// hunks groups changes with their context lines.
func hunks(ops []editOp) []hunk {
	var hs []hunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		from := max(0, i-diffContext)
		// Extend while the next change is within twice the context.
		end := i
		for k := i; k < len(ops); k++ {
			if ops[k].kind != ' ' {
				end = k
				continue
			}
			if k-end > 2*diffContext {
				break
			}
		}
		to := min(len(ops), end+1+diffContext)
		h := hunk{from: from, to: to, aStart: ops[from].a, bStart: ops[from].b}
		for _, op := range ops[from:to] {
			if op.kind != '+' {
				h.aLen++
			}
			if op.kind != '-' {
				h.bLen++
			}
		}
		hs = append(hs, h)
		i = to
	}
	return hs
}
