package delivery

import (
	"context"
	"strings"
	"testing"
	"time"
)

// lineProgram is a program with a one-line prompt and no input box a
// profile could recognise beyond it: a REPL, a read loop. Enter takes the
// line (accept) or keeps it and prints an error under it (refuse).
type lineProgram struct {
	prompt   string
	refuse   bool
	history  []string
	input    string
	taken    []string
	pastes   int
	presses  int
	errBelow string // printed under the prompt by a refused Enter
}

func (p *lineProgram) LeaveMode(context.Context, string) error { return nil }
func (p *lineProgram) Capture(context.Context, string, int) ([]string, error) {
	lines := append(append([]string{}, p.history...), p.prompt+p.input)
	if p.errBelow != "" {
		lines = append(lines, p.errBelow)
	}
	return append(lines, "", ""), nil
}
func (p *lineProgram) Paste(_ context.Context, _ string, text string) error {
	p.pastes++
	p.input += text
	return nil
}
func (p *lineProgram) SendBytes(context.Context, string, ...byte) error {
	p.presses++
	if p.refuse {
		p.errBelow = "error: input refused"
		return nil
	}
	p.history = append(p.history, p.prompt+p.input, "ok")
	p.taken, p.input = append(p.taken, p.input), ""
	return nil
}

func deliverToProgram(p *lineProgram, tweak func(*Options)) Result {
	return deliverWith(p, tweak)
}

func deliverThrough(term Terminal, reader readerFunc) Result {
	return deliverWith(term, func(o *Options) { o.Reader = reader })
}

func deliverWith(term Terminal, tweak func(*Options)) Result {
	c := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = time.Second, time.Second
	if tweak != nil {
		tweak(&opts)
	}
	d := &Deliverer{Term: term, Locks: &noLocks{}, Clock: c, Socket: "/tmp/s", Opts: opts}
	return d.Deliver(context.Background(), "%1", testID, "hello")
}

// With no input box recognised, nothing on the prompt line or elsewhere
// on screen is proof (issue 17, item 5): on main, each of these ended
// "submitted" with nothing taken.
func TestNoProofWithoutABox(t *testing.T) {
	t.Run("a refused Enter prints an error under the prompt", func(t *testing.T) {
		p := &lineProgram{prompt: "> ", refuse: true}
		res := deliverToProgram(p, nil)
		if res.Verdict == Submitted || res.Verdict == Queued || len(p.taken) != 0 {
			t.Fatalf("verdict %s (%v), taken %q: a refused line is not submitted", res.Verdict, res.Err, p.taken)
		}
		if res.Presses != 1 || p.pastes != 1 {
			t.Errorf("%d presses, %d pastes; want one each", res.Presses, p.pastes)
		}
	})
	t.Run("resuming text left on a prompt the profile does not know", func(t *testing.T) {
		// python's >>> with a profile whose ready pattern knows the empty
		// prompt but no box: the first delivery stops at typed; a resumed
		// one must not take the id on the prompt line for proof, nor type
		// the text again.
		p := &lineProgram{prompt: ">>> "}
		python := readerFunc(func(lines []string) Reading {
			lines = TrimScreen(lines)
			if len(lines) > 0 && lines[len(lines)-1] == ">>>" {
				return Reading{State: Ready, BoxRow: len(lines) - 1}
			}
			return Reading{State: Unknown, BoxRow: -1}
		})
		withPython := func(o *Options) { o.Reader = python }
		res := deliverToProgram(p, withPython)
		if res.Verdict != Typed || p.pastes != 1 || res.Presses != 0 {
			t.Fatalf("first delivery: %s (%v), %d pastes, %d presses; want typed, 1, 0", res.Verdict, res.Err, p.pastes, res.Presses)
		}
		res = deliverToProgram(p, func(o *Options) { o.Reader, o.Resume, o.Earlier = python, true, res.Reached })
		if res.Verdict == Submitted || p.pastes != 1 || p.presses != 0 || len(p.taken) != 0 {
			t.Fatalf("resumed: %s (%v), %d pastes, %d presses, taken %q; want no proof, nothing typed or pressed", res.Verdict, res.Err, p.pastes, p.presses, p.taken)
		}
		if !strings.Contains(res.Err.Error(), "not typed again") {
			t.Errorf("error %q should say the text is not typed again", res.Err)
		}
	})
	t.Run("accepted lines still prove themselves above a recognised prompt", func(t *testing.T) {
		p := &lineProgram{prompt: "> "}
		if res := deliverToProgram(p, nil); res.Verdict != Submitted || len(p.taken) != 1 {
			t.Fatalf("verdict %s (%v), taken %q", res.Verdict, res.Err, p.taken)
		}
	})
}

// dialogProgram takes a line on Enter and at once opens a permission
// dialog under it, as Claude Code does when its model answers a message
// with a tool call straight away.
type dialogProgram struct{ lineProgram }

func (p *dialogProgram) Capture(context.Context, string, int) ([]string, error) {
	if len(p.taken) == 0 {
		return p.lineProgram.Capture(context.Background(), "", 0)
	}
	return append(append([]string{}, p.history...), "────────", " Do you want to proceed?", " ❯ 1. Yes", "   2. No", ""), nil
}

// A dialog read with its place: the transcript above it is proof, as
// above a box. Without the place the id proves nothing (the verdict was
// unknown, seen live with Claude Code: TestLivePermissionDialogIsNeverAnswered,
// 3 runs in 6).
func TestTheTranscriptAboveAPlacedDialogIsProof(t *testing.T) {
	reader := func(place bool) readerFunc {
		return func(lines []string) Reading {
			lines = TrimScreen(lines)
			for i, l := range lines {
				if l == "────────" {
					rd := Reading{State: Dialog, BoxRow: -1, Detail: "dialog: Do you want to proceed?"}
					if place {
						rd.DialogRow = i
					}
					return rd
				}
			}
			if last := len(lines) - 1; last >= 0 && strings.HasPrefix(lines[last], ">") {
				box := strings.TrimSpace(lines[last][1:])
				return Reading{State: stateOf(box), BoxRow: last, Box: box}
			}
			return Reading{State: Unknown, BoxRow: -1}
		}
	}
	p := &dialogProgram{lineProgram{prompt: "> "}}
	res := deliverThrough(p, reader(true))
	if res.Verdict != Submitted || p.presses != 1 || len(p.taken) != 1 {
		t.Fatalf("placed dialog: verdict %s (%v), %d presses; want submitted after one", res.Verdict, res.Err, p.presses)
	}
	p = &dialogProgram{lineProgram{prompt: "> "}}
	res = deliverThrough(p, reader(false))
	if res.Verdict != VerdictUnknown || p.presses != 1 {
		t.Fatalf("unplaced dialog: verdict %s (%v), %d presses; want unknown after one", res.Verdict, res.Err, p.presses)
	}
}

func stateOf(box string) State {
	if box == "" {
		return Ready
	}
	return Draft
}
