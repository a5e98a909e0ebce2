package tmux

import (
	"context"
	"errors"
)

// Attached is a Client that runs its commands over a control client
// attached to one session, falling back to one process per command when the
// control client cannot be had or dies (its session was killed, say).
//
// Only reads fall back after a failure mid-command: a paste or a key press
// whose answer was lost may have happened, and doing it again could type a
// message twice. Those return the error and let the delivery decide.
type Attached struct {
	exec *Exec
	ctrl *Control // nil when control mode was not available
}

// Attach opens a control client on session (an exact name). It fails with
// ErrSessionNotFound or ErrNoServer when those are the truth; any other
// failure of control mode leaves a working client that uses exec alone.
func Attach(ctx context.Context, e *Exec, session string) (*Attached, error) {
	ctrl, err := DialControl(ctx, e, session)
	switch {
	case err == nil:
		return &Attached{exec: e, ctrl: ctrl}, nil
	case errors.Is(err, ErrSessionNotFound), errors.Is(err, ErrNoServer), ctx.Err() != nil:
		return nil, err
	}
	if e.Trace != nil {
		e.Trace("control mode unavailable, one process per command", 0, err)
	}
	return &Attached{exec: e}, nil
}

// Control reports whether commands go over a control client.
func (a *Attached) Control() bool { return a.live() != nil }

// Close detaches the control client.
func (a *Attached) Close() error {
	if a.ctrl == nil {
		return nil
	}
	return a.ctrl.Close()
}

func (a *Attached) live() *Control {
	if a.ctrl == nil || a.ctrl.gone() {
		return nil
	}
	return a.ctrl
}

// read runs a read-only command over the control client, and over exec when
// the control client is gone or went away during the command.
func read[T any](ctx context.Context, a *Attached, viaCtrl func(*Control) (T, error), viaExec func(*Exec) (T, error)) (T, error) {
	if c := a.live(); c != nil {
		v, err := viaCtrl(c)
		if err == nil || a.live() != nil || ctx.Err() != nil {
			return v, err
		}
	}
	return viaExec(a.exec)
}

func (a *Attached) Server() Server { return a.exec.Server() }

func (a *Attached) Info(ctx context.Context) (Info, error) { return a.exec.Info(ctx) }

func (a *Attached) ListPanes(ctx context.Context) ([]Pane, error) {
	return read(ctx, a,
		func(c *Control) ([]Pane, error) { return c.ListPanes(ctx) },
		func(e *Exec) ([]Pane, error) { return e.ListPanes(ctx) })
}

func (a *Attached) SessionPane(ctx context.Context, session string) (Pane, error) {
	return read(ctx, a,
		func(c *Control) (Pane, error) { return c.SessionPane(ctx, session) },
		func(e *Exec) (Pane, error) { return e.SessionPane(ctx, session) })
}

func (a *Attached) LeaveMode(ctx context.Context, pane string) error {
	_, err := read(ctx, a,
		func(c *Control) (struct{}, error) { return struct{}{}, c.LeaveMode(ctx, pane) },
		func(e *Exec) (struct{}, error) { return struct{}{}, e.LeaveMode(ctx, pane) })
	return err
}

func (a *Attached) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	return read(ctx, a,
		func(c *Control) ([]string, error) { return c.Capture(ctx, pane, history) },
		func(e *Exec) ([]string, error) { return e.Capture(ctx, pane, history) })
}

func (a *Attached) Paste(ctx context.Context, pane, buffer, text string) error {
	if c := a.live(); c != nil {
		return c.Paste(ctx, pane, buffer, text)
	}
	return a.exec.Paste(ctx, pane, buffer, text)
}

func (a *Attached) SendBytes(ctx context.Context, pane string, b ...byte) error {
	if c := a.live(); c != nil {
		return c.SendBytes(ctx, pane, b...)
	}
	return a.exec.SendBytes(ctx, pane, b...)
}
