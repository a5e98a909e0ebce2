// Package textdiff shows how one small text file becomes another, as a
// unified diff of lines: what install commands print before they change a
// person's settings file.
package textdiff

import (
	"fmt"
	"strings"
)

// maxCells bounds the work of one diff (lines before x lines after);
// beyond it the whole old text is shown removed and the new one added.
const maxCells = 4 << 20

// Unified returns the unified diff (3 lines of context) that turns old
// into new, with headers naming oldName and newName; "" when they are
// equal.
func Unified(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	ops := script(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change closer than 2*context to the next.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			} else if j-end >= 2*context {
				break
			}
		}
		end = min(end+context, len(ops))
		oldStart, newStart := ops[start].a, ops[start].b
		var oldN, newN int
		var body strings.Builder
		for _, op := range ops[start:end] {
			body.WriteByte(op.kind)
			body.WriteString(op.text)
			body.WriteByte('\n')
			if op.kind != '+' {
				oldN++
			}
			if op.kind != '-' {
				newN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(oldStart, oldN), span(newStart, newN))
		out.WriteString(body.String())
		i = end
	}
	if !strings.HasSuffix(old, "\n") && old != "" || !strings.HasSuffix(new, "\n") && new != "" {
		out.WriteString("\\ (a last line without a newline end)\n")
	}
	return out.String()
}

// op is one line of the script: kept (' '), removed ('-') or added ('+');
// a and b are its 0-based line numbers in old and new (where it would be).
type op struct {
	kind byte
	text string
	a, b int
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// script is a shortest edit script from a to b by longest common
// subsequence (quadratic: these are small files).
func script(a, b []string) []op {
	var ops []op
	if len(a)*len(b) > maxCells {
		for i, l := range a {
			ops = append(ops, op{'-', l, i, 0})
		}
		for j, l := range b {
			ops = append(ops, op{'+', l, len(a), j})
		}
		return ops
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i, j}) // removals before additions
			i++
		default:
			ops = append(ops, op{'+', b[j], i, j})
			j++
		}
	}
	return ops
}

// span is a hunk range: 1-based start and length ("0,0" for none).
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
