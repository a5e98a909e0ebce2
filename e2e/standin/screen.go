package main

import (
	"bytes"
	"io"
	"strings"
)

// screen draws like Ink does: transcript lines are printed once and scroll
// away into the terminal's history, while the bottom region is erased and
// printed again on every redraw. That only works if we know how many rows
// the region covers, so every row is wrapped to the width beforehand and the
// terminal never wraps on its own.
type screen struct {
	out           io.Writer
	width, height int
	rowCells      []int // width in cells of each region row as last drawn
	rows          int   // rows the last drawn region covers now
}

func newScreen(out io.Writer, width, height int) *screen {
	return &screen{out: out, width: max(width, 1), height: max(height, 1)}
}

// resize records a new terminal size. When the width shrinks, tmux reflows
// the region already on screen, so each old row may now cover several.
func (s *screen) resize(width, height int) {
	width, height = max(width, 1), max(height, 1)
	if width < s.width {
		s.rows = 0
		for _, cells := range s.rowCells {
			s.rows += max(1, (cells+width-1)/width)
		}
	}
	s.width, s.height = width, height
}

// erase blanks the region row by row, from the cursor (at the end of its
// last row) up to its first row, and leaves the cursor there. ESC[J would
// be shorter, but tmux before 3.4 treats ESC[J at the top-left corner as
// "clear screen" and scrolls the whole screen into history, which happens
// whenever the region starts on the first row.
func (s *screen) erase(b *bytes.Buffer) {
	if s.rows == 0 {
		return
	}
	b.WriteString("\r\x1b[2K")
	for range min(s.rows, s.height) - 1 {
		b.WriteString("\x1b[1A\x1b[2K")
	}
}

// draw erases the region, prints the new transcript rows above it, then the
// region again, leaving the cursor at the end of its last row.
func (s *screen) draw(transcript, region []string) error {
	var b bytes.Buffer
	s.erase(&b)
	for _, row := range transcript {
		b.WriteString(row)
		b.WriteString("\r\n")
	}
	// A region taller than the terminal would scroll its own first rows
	// away where they can no longer be erased; keep its bottom.
	if len(region) > s.height {
		region = region[len(region)-s.height:]
	}
	b.WriteString(strings.Join(region, "\r\n"))
	s.rows = len(region)
	s.rowCells = s.rowCells[:0]
	for _, row := range region {
		s.rowCells = append(s.rowCells, widths.StringWidth(row))
	}
	_, err := s.out.Write(b.Bytes())
	return err
}
