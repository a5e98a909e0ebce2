// Package tui is agentmsg top: a terminal UI over package service that
// shows every agent of every team with its live state and every message
// on its way, lets a person deliver, retry, mark handled and open an
// agent's pane, and alerts when something is stuck. It is a front end
// like the CLI and the MCP server: every action is a service operation,
// and it imports neither of them.
//
// What it shows comes from a Source: Direct reads tmux (at most once a
// second), the mailbox and the event log itself; the daemon's event
// stream can take its place. The Model is a bubbletea model; Plain is the
// same for a screen reader, line by line.
package tui

import (
	"context"
	"errors"
	"io"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/service"
)

// RunOptions are what top runs with: its streams, whether it draws
// (Plain: lines of text for a screen reader, commands read as lines), in
// colour or not (NoColor: NO_COLOR), and when its alerts fire (Rules) and
// who hears of them (Notifier).
type RunOptions struct {
	In       io.Reader
	Out      io.Writer
	Plain    bool
	NoColor  bool
	Rules    alerts.Rules
	Notifier alerts.Teller
}

// Run is agentmsg top over svc (main hands it to the CLI): it watches svc's tmux
// server and mailbox directly until the person quits or ctx ends.
func Run(ctx context.Context, svc *service.Service, o RunOptions) error {
	src := &Direct{Service: svc, Events: svc.Store.Events, Place: svc.Store.Place.Socket}
	return RunSource(ctx, src, serviceActions{svc}, o)
}

// RunSource is top over any source and actions.
func RunSource(ctx context.Context, src Source, actions Actions, o RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan Update, 16)
	var wg sync.WaitGroup
	wg.Go(func() { _ = src.Run(ctx, updates) })
	defer wg.Wait()
	defer cancel() // the source stops before Run returns
	if o.Plain {
		p := &Plain{In: o.In, Out: o.Out, Actions: actions, Updates: updates, Rules: o.Rules, Notifier: o.Notifier}
		return p.Run(ctx)
	}
	m := New(Options{Ctx: ctx, Actions: actions, Updates: updates, Rules: o.Rules, Notifier: o.Notifier, Colors: colors(o)})
	_, err := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithAltScreen()).Run()
	if errors.Is(err, tea.ErrInterrupted) || errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: the normal end
	}
	return err
}

// colors is the colour profile to draw with: none under NO_COLOR, else
// what the terminal on o.Out says it takes.
func colors(o RunOptions) termenv.Profile {
	if o.NoColor || o.Out == nil {
		return termenv.Ascii
	}
	return termenv.NewOutput(o.Out).EnvColorProfile()
}
