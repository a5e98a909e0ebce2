package profile

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
)

// Override changes fields of a profile, from the config file. Nil or empty
// fields keep the base's value.
type Override struct {
	// Base names the profile to start from. Empty: change the profile of
	// the override's own name, which must exist. Set: a new profile (or a
	// replacement of an existing one) based on that profile.
	Base     string
	Commands []string
	Settle   *time.Duration
	Queues   *bool
	// BracketedPaste says whether the program turns bracketed paste on.
	BracketedPaste *bool
	FoldBytes      *int
	FoldLines      *int
	// PromptPattern, when set, makes the profile read a program that
	// asks for each line with a prompt (see Prompt): a regular expression
	// that matches the prompt at the start of the last row. It replaces
	// the base's reader; the patterns below refine it.
	PromptPattern string
	// Regular expressions matched against each of the bottom rows of the
	// screen as it shows them (trailing spaces trimmed, then with one
	// space put back), refining the base's reader:
	//   DialogPattern: a match means a dialog is open (never type).
	//   BusyPattern: a match means the agent is working.
	//   PlaceholderPattern: a box text it matches is a placeholder, i.e. empty.
	//   ReadyPattern: when the base reader finds no box, the bottom-most
	//   matching row is an empty, ready prompt; the last row cut after a
	//   prefix it matches is that prompt holding the text after the cut.
	ReadyPattern, BusyPattern, DialogPattern, PlaceholderPattern string
}

// Apply returns base with the overrides applied: a copy, base is not
// changed. Overrides are applied in name order, and one may be based on a
// profile another adds. New profiles come after base, so that their
// commands win in DetectIn.
func Apply(base []Profile, overrides map[string]Override) ([]Profile, error) {
	out := slices.Clone(base)
	for i := range out {
		out[i].Commands = slices.Clone(out[i].Commands)
	}
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	slices.Sort(names)

	// Resolve bases in passes, so "b" may be based on "a" added here.
	pending := names
	for len(pending) > 0 {
		var next []string
		var errs []error
		for _, name := range pending {
			o := overrides[name]
			from := o.Base
			if from == "" {
				from = name
			}
			start, ok := LookupIn(out, from)
			if !ok {
				if slices.Contains(pending, from) && from != name {
					next = append(next, name) // its base comes later in this pass
					continue
				}
				errs = append(errs, unknownBase(name, o.Base))
				continue
			}
			p, err := applyOne(name, start, o)
			if err != nil {
				return nil, err
			}
			// What the profile is (PromptOnly) goes with its name: a
			// replacement keeps the one it replaces, whatever its base;
			// a profile added here is an agent CLI's.
			if i := slices.IndexFunc(out, func(q Profile) bool { return q.Name == name }); i >= 0 {
				p.PromptOnly = out[i].PromptOnly
				out[i] = p
			} else {
				p.PromptOnly = false
				out = append(out, p)
			}
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		if len(next) == len(pending) {
			return nil, fmt.Errorf("profiles %s: their bases form a cycle", strings.Join(next, ", "))
		}
		pending = next
	}
	return out, nil
}

func unknownBase(name, base string) error {
	if base == "" {
		var names []string
		for _, p := range Builtin() {
			names = append(names, p.Name)
		}
		return fmt.Errorf("profile %q: no such profile; to add one, give a base (%s)", name, strings.Join(names, ", "))
	}
	return fmt.Errorf("profile %q: base %q: no such profile", name, base)
}

func applyOne(name string, p Profile, o Override) (Profile, error) {
	if strings.TrimSpace(name) == "" {
		return Profile{}, errors.New("a profile needs a name")
	}
	p.Name = name
	if o.Commands != nil {
		for _, c := range o.Commands {
			if strings.TrimSpace(c) == "" {
				return Profile{}, fmt.Errorf("profile %q: an empty command", name)
			}
		}
		p.Commands = slices.Clone(o.Commands)
	}
	if o.Settle != nil {
		if *o.Settle < 0 {
			return Profile{}, fmt.Errorf("profile %q: settle %s is negative", name, *o.Settle)
		}
		p.Settle = *o.Settle
	}
	if o.Queues != nil {
		p.Queues = *o.Queues
	}
	if o.BracketedPaste != nil {
		p.BracketedPaste = *o.BracketedPaste
	}
	if o.FoldBytes != nil {
		if *o.FoldBytes < 0 {
			return Profile{}, fmt.Errorf("profile %q: fold bytes %d is negative", name, *o.FoldBytes)
		}
		p.FoldBytes = *o.FoldBytes
	}
	if o.FoldLines != nil {
		if *o.FoldLines < 0 {
			return Profile{}, fmt.Errorf("profile %q: fold lines %d is negative", name, *o.FoldLines)
		}
		p.FoldLines = *o.FoldLines
	}
	if o.PromptPattern != "" {
		prompt, err := NewPrompt(o.PromptPattern)
		if err != nil {
			return Profile{}, fmt.Errorf("profile %q: prompt pattern %w", name, err)
		}
		p.Reader = prompt
	}
	pr := patterned{base: p.Reader}
	for _, f := range []struct {
		what string
		src  string
		dst  **regexp.Regexp
	}{
		{"ready pattern", o.ReadyPattern, &pr.ready},
		{"busy pattern", o.BusyPattern, &pr.busy},
		{"dialog pattern", o.DialogPattern, &pr.dialog},
		{"placeholder pattern", o.PlaceholderPattern, &pr.placeholder},
	} {
		if f.src == "" {
			continue
		}
		re, err := regexp.Compile(f.src)
		if err != nil {
			return Profile{}, fmt.Errorf("profile %q: %s %q: %w", name, f.what, f.src, err)
		}
		*f.dst = re
	}
	if pr.ready != nil || pr.busy != nil || pr.dialog != nil || pr.placeholder != nil {
		if pr.base == nil {
			pr.base = Generic{}
		}
		p.Reader = pr
	}
	return p, nil
}

// framed is a reader of a CLI that draws its input box apart from the
// transcript: its dialogs take the box's place or open under it, and what
// stands above the box is the conversation, never a dialog.
type framed interface{ framed() }

func (Claude) framed() {}
func (Codex) framed()  {}
func (Gemini) framed() {}
func (Droid) framed()  {}

// patterned refines a reader with patterns from the config file. Order of
// precedence: a shell prompt (from the base), a dialog, busy, then a
// placeholder or a ready prompt.
type patterned struct {
	base                             delivery.ScreenReader
	ready, busy, dialog, placeholder *regexp.Regexp
}

func (p patterned) Read(screen []string) delivery.Reading {
	r := p.base.Read(screen)
	if r.Shell {
		return r
	}
	lines := trimScreen(screen)
	from := bottom(lines, bottomRows)
	match := func(re *regexp.Regexp, from int) int {
		for i := len(lines) - 1; re != nil && i >= from; i-- {
			if matchRow(re, lines[i]) {
				return i
			}
		}
		return -1
	}
	dialogFrom := from
	if _, ok := p.base.(framed); ok && r.BoxRow >= 0 {
		// Above such a box is the transcript, which may quote a dialog.
		dialogFrom = max(from, r.BoxRow)
	}
	if i := match(p.dialog, dialogFrom); i >= 0 {
		return dialog("dialog (profile pattern): " + strings.TrimSpace(lines[i]))
	}
	if p.placeholder != nil && r.Box != "" && p.placeholder.MatchString(r.Box) {
		r.Box = ""
		if r.State == delivery.Draft {
			r.State, r.Detail = delivery.Ready, ""
		}
	}
	if match(p.busy, from) >= 0 {
		switch r.State {
		case delivery.Ready, delivery.Draft:
			r.State, r.Detail = delivery.Busy, "the agent is working (profile pattern)"
		case delivery.Unknown:
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working (profile pattern)"}
		}
		return r
	}
	if r.State == delivery.Unknown && p.ready != nil {
		if i := match(p.ready, from); i >= 0 {
			return delivery.Reading{State: delivery.Ready, BoxRow: i}
		}
		if last := len(lines) - 1; last >= 0 {
			if box, ok := typedAfter(p.ready, lines[last]); ok {
				return delivery.Reading{State: delivery.Draft, BoxRow: last, Box: box, Detail: "the prompt holds text"}
			}
		}
	}
	return r
}

// matchRow matches a row as the screen shows it: trimmed of trailing
// spaces, so a pattern written with the prompt's own trailing space
// ("^my> $") is tried again with one space put back.
func matchRow(re *regexp.Regexp, row string) bool {
	return re.MatchString(row) || re.MatchString(row+" ")
}

// typedAfter reads row as the empty prompt that ready describes with text
// typed after it: the row cut at its first space after which the part
// before matches ready. What was typed is the rest.
func typedAfter(ready *regexp.Regexp, row string) (string, bool) {
	for i, c := range row {
		if c == ' ' && i > 0 && matchRow(ready, row[:i]) {
			if box := strings.TrimSpace(row[i:]); box != "" {
				return box, true
			}
		}
	}
	return "", false
}

func (p patterned) recognize(lines []string) (string, bool) {
	if r, ok := p.base.(recognizer); ok {
		return r.recognize(lines)
	}
	return "", false
}
