package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
)

// DoctorOptions are doctor's inputs.
type DoctorOptions struct {
	Factory *Factory
	Target  target.Target
	Probe   bool
	Agent   agentFlags
}

func NewCmdDoctor(f *Factory) *cobra.Command { return newCmdDoctor(f, nil) }

func newCmdDoctor(f *Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{Factory: f}
	c := &cobra.Command{
		Use:   "doctor TEAM NAME",
		Short: "Explain what agentmsg sees of one agent, and what a send would do now",
		Long: `Doctor shows, without typing anything: the tmux server and its version, the
exact session agent-TEAM-NAME (and the sessions a bare prefix match would have
reached instead), the pane, its foreground command, which agent profile reads
its screen and why, the state of the input box now, the bottom of the screen,
and what a send would do.

--probe also times ten harmless round trips (screen captures) over the same
tmux client a send uses.`,
		Example: `  agentmsg doctor alpha ana
  agentmsg doctor --probe alpha ana-2
  agentmsg --json doctor alpha ana`,
		Args: argsBetween(2, 2, "TEAM NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target.New(args[0], args[1])
			if err != nil {
				return err
			}
			opts.Target = t
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return doctorRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Probe, "probe", false, "also time ten harmless round trips (screen captures)")
	opts.Agent.register(c, true)
	opts.Agent.registerPane(c)
	return c
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	f, t := opts.Factory, opts.Target
	d, err := f.Dispatcher()
	if err != nil {
		return err
	}
	call, err := opts.Agent.call(f)
	if err != nil {
		return err
	}
	n := 0
	if opts.Probe {
		n = 10
	}
	in, err := d.Inspect(ctx, t, n, call)
	if err != nil {
		return err
	}
	tm := whichTmux(ctx, f, in.Server.Version)
	would := wouldSay(in.Would, t.Session)
	lost := eventsLost(f)
	if f.JSON {
		probeMS := make([]float64, len(in.Probe))
		for i, p := range in.Probe {
			probeMS[i] = float64(p.Microseconds()) / 1000
		}
		doc := map[string]any{
			"target": t.String(), "session": t.Session, "found": in.Found, "similar": in.Similar,
			"socket": in.Server.Socket, "tmux_version": in.Server.Version, "tmux": tm,
			"pane": in.Pane.ID, "command": in.Pane.Command, "in_mode": in.Pane.InMode,
			"profile": in.Profile.Name, "profile_why": in.Why,
			"settle_ms": float64(in.Profile.Settle.Microseconds()) / 1000, "settle_why": settleWhy(in.Profile),
			"state": string(in.Reading.State), "detail": in.Reading.Detail, "box": in.Reading.Box,
			"queued": in.Reading.Queued, "shell": in.Reading.Shell,
			"would": would, "probe_ms": probeMS, "exit_code": ExitOK,
		}
		if suggested, ok := profile.SuggestPrompt(in.Screen); ok && promptAdvice(in) != nil {
			doc["suggested_prompt"] = suggested
		}
		if lost.Count > 0 {
			doc["events_lost"], doc["events_lost_since"] = lost.Count, lost.Since
		}
		var panes []map[string]any
		for _, p := range in.Panes {
			panes = append(panes, map[string]any{"pane": p.ID, "address": dispatch.PaneAddress(p), "window": p.WindowName,
				"command": p.Command, "active": p.Active, "agent": p.ID == in.Pane.ID})
		}
		doc["panes"] = panes
		switch {
		case !in.Found:
			doc["exit_code"], doc["error"] = ExitNotFound, "no session named exactly "+t.Session
		case in.PaneErr != nil:
			doc["exit_code"], doc["error"] = ExitNotFound, errText(in.PaneErr)
		}
		writeJSON(f, doc)
		if code := doc["exit_code"].(int); code != ExitOK {
			return exitError{code}
		}
		return nil
	}
	w := f.IO.Out
	fmt.Fprintf(w, "server    %s (tmux %s, pid %d)\n", show(in.Server.Socket), show(in.Server.Version), in.Server.PID)
	printTmux(w, tm)
	printHazards(w, tm.Hazards)
	if lost.Count > 0 {
		fmt.Fprintf(w, "events    %d could not be written since %s (%s): event clients learn of it once the log can be written; every message's state is in its inbox\n",
			lost.Count, lost.Since.Local().Format(time.DateTime), show(lost.Err))
	}
	if in.Found {
		fmt.Fprintf(w, "session   %s: found (exact match)\n", t.Session)
	} else {
		fmt.Fprintf(w, "session   %s: NOT FOUND\n", t.Session)
	}
	if len(in.Similar) > 0 {
		fmt.Fprintf(w, "          a bare tmux -t %s would have reached %s instead; agentmsg never does\n", t.Session, show(strings.Join(in.Similar, ", ")))
	}
	if len(in.Panes) > 1 {
		fmt.Fprintf(w, "panes     %d in the session:\n", len(in.Panes))
		for _, p := range in.Panes {
			mark := " "
			if p.ID == in.Pane.ID {
				mark = "*" // the agent's
			}
			fmt.Fprintf(w, "        %s %s %s running %s (window %s)\n", mark, dispatch.PaneAddress(p), show(p.ID), show(p.Command), show(p.WindowName))
		}
	}
	if in.PaneErr != nil {
		fmt.Fprintf(w, "pane      %s\n", showErr(in.PaneErr))
		fmt.Fprintf(w, "a send would: %s\n", show(would))
		return exitError{ExitNotFound}
	}
	if in.Found {
		mode := ""
		if in.Pane.InMode {
			mode = " (in copy mode: a send leaves it first)"
		}
		fmt.Fprintf(w, "pane      %s, %dx%d, running %s%s\n", show(in.Pane.ID), in.Pane.Width, in.Pane.Height, show(in.Pane.Command), mode)
		fmt.Fprintf(w, "profile   %s (%s)\n", show(in.Profile.Name), show(in.Why))
		fmt.Fprintf(w, "settle    %v (%s)\n", in.Profile.Settle, settleWhy(in.Profile))
		state := string(in.Reading.State)
		if in.Reading.Detail != "" {
			state += ": " + in.Reading.Detail
		}
		if in.Reading.Queued && !strings.Contains(state, "queued") {
			state += " (messages queued)"
		}
		fmt.Fprintf(w, "state     %s\n", show(state))
		if in.Reading.Box != "" {
			fmt.Fprintf(w, "box       %q\n", clipText(in.Reading.Box, 100))
		}
		fmt.Fprintf(w, "screen    (bottom)\n")
		for _, l := range bottom(in.Screen, 8) {
			fmt.Fprintf(w, "  │ %s\n", show(l))
		}
	}
	fmt.Fprintf(w, "a send would: %s\n", show(would))
	if advice := promptAdvice(in); advice != nil {
		fmt.Fprintf(w, "advice    %s\n", strings.Join(advice, "\n          "))
	}
	if len(in.Probe) > 0 {
		p := slices.Clone(in.Probe)
		slices.Sort(p)
		fmt.Fprintf(w, "probe     %d captures: median %s, max %s\n", len(p), p[len(p)/2].Round(time.Microsecond), p[len(p)-1].Round(time.Microsecond))
	}
	if !in.Found {
		return exitError{ExitNotFound}
	}
	return nil
}

// eventsLost is what the mailbox's event log could not write and has not
// told yet (a full disk); zero when nothing is lost or it cannot be read.
func eventsLost(f *Factory) eventlog.Loss {
	if f.Mailbox == nil {
		return eventlog.Loss{}
	}
	store, err := f.Mailbox()
	if err != nil || store.Events == nil {
		return eventlog.Loss{}
	}
	lost, _ := store.Events.Lost()
	return lost
}

// wouldSay words what a send would do, for doctor.
func wouldSay(p dispatch.Plan, session string) string {
	switch p.Stop {
	case dispatch.StopNotFound:
		return fmt.Sprintf("refuse with exit %d: there is no session named exactly %s", ExitNotFound, session)
	case dispatch.StopGone:
		return fmt.Sprintf("refuse with exit %d: the session went away", ExitNotFound)
	case dispatch.StopDead:
		return "fail: the program in the pane has exited"
	case dispatch.StopSelf:
		return "refuse: that is the pane you run in"
	case dispatch.StopPaneChoice:
		return fmt.Sprintf("refuse with exit %d: it cannot tell which pane is the agent's", ExitNotFound)
	}
	wait := "wait up to " + p.ReadyTimeout.String()
	keep := fmt.Sprintf("; then keep it for deliver (or exit %d with --no-queue)", ExitNotReady)
	switch {
	case p.Action == delivery.ActRefuse:
		return "refuse: the pane shows a shell prompt, so a message would run as a command (--force types it anyway)"
	case p.Action == delivery.ActType:
		return "type the message now, submit it after " + p.Settle.String() + " and confirm it"
	case p.Action == delivery.ActQueue:
		return "type it now: the agent is busy but queues messages (verdict queued; without --while-busy a send waits for the turn to end)"
	case p.State == delivery.Dialog:
		return wait + " for the dialog to close, typing and pressing nothing" + keep
	case p.State == delivery.Draft:
		return wait + " for the person's text to leave the box, never touching it" + keep
	}
	return wait + " for an empty input box (" + string(p.State) + ")" + keep
}

// bottom is the last n non-blank-trailing lines of a screen.
func bottom(lines []string, n int) []string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return lines[max(0, end-n):end]
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// settleWhy says where a profile's settle comes from.
func settleWhy(p profile.Profile) string {
	c, ok := profile.Calibrated(p.Name)
	switch {
	case ok && c.Settle() == p.Settle:
		return c.Explain()
	case ok:
		return "set in the config file; " + c.Explain()
	case p.Settle == 0:
		return "none: the text on screen is proof the program took it"
	}
	return "set in the config file"
}

// promptAdvice, for a screen with no input box or prompt its profile
// knows, is how to describe the program's prompt: from its last row when
// that looks like an empty prompt. Nil for any other screen.
func promptAdvice(in dispatch.Inspection) []string {
	if !in.Found || in.PaneErr != nil || in.Reading.State != delivery.Unknown || in.Reading.Shell {
		return nil
	}
	prompt, ok := profile.SuggestPrompt(in.Screen)
	if !ok {
		prompt = "PROMPT "
	}
	advice := []string{
		fmt.Sprintf("profile %s finds no input box or prompt on this screen. If the program reads lines after a prompt, describe it in the config file:", show(in.Profile.Name)),
	}
	advice = append(advice, promptProfile(in.Profile.Name, in.Pane.Command, profile.Procs{}.Program(in.Pane.PID), prompt)...)
	return append(advice, "or read it as another profile: --agent NAME (spawn --agent NAME records one for the agent)")
}
