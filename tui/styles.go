package tui

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles colour what top draws. Colour only adds to the words: every
// state is written out, and the selected row is marked with ">", so that
// NO_COLOR and a screen reader lose nothing.
type styles struct {
	header, title, selected, dim, alert, key lipgloss.Style
	states                                   map[string]lipgloss.Style
}

// newStyles builds the styles for a terminal of the given colour profile
// (termenv.Ascii for none). Colours are from the 256-colour palette, which
// lipgloss brings down to 16 where that is all there is.
func newStyles(profile termenv.Profile) styles {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(profile)
	// Never ask the terminal for its background: the question waits for
	// an answer that may not come, and eats keys that arrive meanwhile.
	r.SetHasDarkBackground(true)
	c := func(code string) lipgloss.Style { return r.NewStyle().Foreground(lipgloss.Color(code)) }
	green, yellow, red, magenta, grey, blue := c("42"), c("214"), c("203"), c("177"), c("245"), c("81")
	return styles{
		header:   r.NewStyle().Bold(true).Reverse(true),
		title:    r.NewStyle().Bold(true),
		selected: r.NewStyle().Reverse(true),
		dim:      grey,
		alert:    red.Bold(true),
		key:      r.NewStyle().Bold(true),
		states: map[string]lipgloss.Style{
			// agents
			"ready": green, "busy": yellow, "dialog": red.Bold(true), "draft": magenta,
			"unknown": grey, "exited": grey, noSession: grey,
			// messages
			"pending": blue, "typing": blue, "deferred": yellow, "typed": red.Bold(true), "failed": red.Bold(true),
			"submitted": green, "queued": green, "read": green, "handled": grey, "skipped": grey, "inbox": grey,
		},
	}
}

// state colours a cell by the state it names.
func (s styles) state(state, cell string) string {
	if st, ok := s.states[state]; ok {
		return st.Render(cell)
	}
	return cell
}
