package tmux

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Version is a tmux release as `tmux -V` and #{version} print it: "3.3a",
// "3.7c", "next-3.8", "master".
type Version string

// BinaryVersion asks the binary itself (tmux -V; no server is involved).
func BinaryVersion(ctx context.Context, bin string) (Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-V").Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	v = strings.TrimPrefix(v, "tmux ")
	return Version(v), nil
}

// number is the release as major*100+minor (3.3a is 303); development
// builds ("master", "next-3.8") count as newer than any release.
func (v Version) number() int {
	s := strings.TrimPrefix(string(v), "next-")
	if s == "master" || strings.HasPrefix(string(v), "next-") {
		return 1 << 20
	}
	major, rest, ok := strings.Cut(s, ".")
	if !ok {
		return 0
	}
	minor := rest // "3a" of 3.3a: the digits before the letter
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = rest[:i]
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return 0
	}
	return a*100 + b
}

// AtLeast reports whether v is release major.minor or newer; an unknown
// version is not.
func (v Version) AtLeast(major, minor int) bool { return v.number() >= major*100+minor }

// Hazard is a known defect of a tmux release that matters to agentmsg, and
// what agentmsg does about it.
type Hazard struct {
	Summary string `json:"summary"`
	Defence string `json:"defence"`
	// Handled: agentmsg's defence covers it whole, whatever else runs on
	// the server; nothing is left for a person to do.
	Handled bool `json:"-"`
}

// Hazards lists the known hazards of tmux v (measured here with builds of
// 3.2a, 3.3a, 3.4, 3.5a, 3.6a and 3.7c; see doc.go).
func (v Version) Hazards() []Hazard {
	if v.number() == 0 {
		return []Hazard{{
			Summary: "unknown tmux version " + strconv.Quote(string(v)) + ": agentmsg is tested on 3.2a to 3.7c",
			Defence: "agentmsg uses it as it uses tmux before 3.7, the careful way",
		}}
	}
	var hs []Hazard
	if !v.AtLeast(3, 7) {
		hs = append(hs, Hazard{
			Summary: "the server segfaults, ending every session on it, when a tmux client dies before the server has taken it in (killed, Ctrl-C, or several control-mode clients attaching at once)",
			Defence: "agentmsg runs only ordinary tmux commands, never a control client, and never signals them: each runs in a process group of its own and is left to finish; other tools that kill tmux clients (or attach control clients) can still crash it: tmux 3.7 or newer fixes it",
		}, Hazard{
			Summary: "a pasted ESC[201~ ends bracketed paste early, so the rest of the text would arrive as keystrokes",
			Defence: "agentmsg removes escape sequences from every text before it is pasted",
			Handled: true,
		})
	}
	if !v.AtLeast(3, 2) {
		hs = append(hs, Hazard{
			Summary: "older than 3.2, the oldest release agentmsg is tested on",
			Defence: "none: upgrade tmux",
		})
	}
	return hs
}
