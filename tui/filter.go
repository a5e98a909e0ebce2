package tui

import (
	"strings"
)

// filter selects messages: "team:alpha agent:ana state:deferred" or
// "alpha/ana", and any other word, which must be in the team, agent, id,
// sender, state or reason. State "open" is every message still needing
// something; "done" the others.
type filter struct {
	team, agent, state string
	words              []string
}

// parseFilter reads what the person typed.
func parseFilter(s string) filter {
	var f filter
	for _, w := range strings.Fields(strings.ToLower(s)) {
		key, val, ok := strings.Cut(w, ":")
		switch {
		case ok && key == "team":
			f.team = val
		case ok && key == "agent":
			if t, a, ok := strings.Cut(val, "/"); ok {
				f.team, f.agent = t, a
			} else {
				f.agent = val
			}
		case ok && key == "state":
			f.state = val
		case strings.Count(w, "/") == 1 && !strings.HasPrefix(w, "/") && !strings.HasSuffix(w, "/"):
			f.team, f.agent, _ = strings.Cut(w, "/")
		default:
			f.words = append(f.words, w)
		}
	}
	return f
}

// String is the filter as it would be typed.
func (f filter) String() string {
	var parts []string
	switch {
	case f.team != "" && f.agent != "":
		parts = append(parts, f.team+"/"+f.agent)
	case f.team != "":
		parts = append(parts, "team:"+f.team)
	case f.agent != "":
		parts = append(parts, "agent:"+f.agent)
	}
	if f.state != "" {
		parts = append(parts, "state:"+f.state)
	}
	return strings.Join(append(parts, f.words...), " ")
}

func (f filter) empty() bool { return f.String() == "" }

func (f filter) match(m msgRow) bool {
	if f.team != "" && m.key.Team != f.team || f.agent != "" && m.key.Agent != f.agent {
		return false
	}
	switch f.state {
	case "":
	case "open":
		if !m.open() {
			return false
		}
	case "done":
		if m.open() {
			return false
		}
	default:
		if m.state() != f.state {
			return false
		}
	}
	for _, w := range f.words {
		if !strings.Contains(m.key.Team, w) && !strings.Contains(m.key.Agent, w) && !strings.Contains(strings.ToLower(string(m.env.ID)), w) &&
			!strings.Contains(m.env.From, w) && !strings.Contains(m.state(), w) && !strings.Contains(m.reason(), w) {
			return false
		}
	}
	return true
}

// nextState is the state filter after st, for the key that cycles it.
func nextState(st string) string {
	order := []string{"", "open", "done"}
	for i, s := range order {
		if s == st {
			return order[(i+1)%len(order)]
		}
	}
	return ""
}
