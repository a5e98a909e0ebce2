package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
)

// A command's life. Every command ends: at once on SIGINT, SIGTERM or
// SIGHUP (what it was doing finished or recorded as far as it got), and by
// its time bound otherwise, the longest its flags and settings let it
// wait plus a margin (docs/exit-codes.md lists them). A few run until they
// are stopped (serve, mcp, top, and the follows and watches); they end on
// a signal too. Test runs that were killed left 1,494 senders waiting for
// one inbox's lock 76 minutes later, SIGTERM or not; everything that waits
// now waits on the command's context (mailbox.Store.Life for the locks).

// stopSignals end a command: Ctrl-C, a kill, a closed terminal.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// Stopped is the cause of a command's end by a signal.
type Stopped struct{ Signal os.Signal }

func (e *Stopped) Error() string { return signalName(e.Signal) + " received" }

// signalName is the name a person types to kill(1): SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// signalContext is parent, ended by the first of stopSignals with a
// *Stopped cause. Later signals are taken too, and ignored: a second
// Ctrl-C must not cut the record of a message half typed (the backstop
// ends a command that overstays). stop lets the signals go.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, stopSignals...)
	go func() {
		select {
		case sig := <-ch:
			cancel(&Stopped{Signal: sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// BoundError is the cause of a command's end by its time bound.
type BoundError struct {
	Command string
	Bound   time.Duration
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("%s reached its time bound (%s)", e.Command, e.Bound)
}

// The bounds (docs/exit-codes.md says them).
const (
	// lifeMargin is added to what a command waits for by its flags: its
	// mailbox writes (a lock waits at most a minute), tmux calls (5 s
	// each at most), its records on the way out.
	lifeMargin = time.Minute
	// defaultLife bounds a command that waits for nothing of its own.
	defaultLife = 2 * time.Minute
	// passLife bounds one deliver pass, or a broadcast, at the least:
	// what is not typed by then stays in its inbox for the next one.
	passLife = 10 * time.Minute
	// stopGrace is how long a command has to end once its life has (a
	// signal, its bound): a paste or press under way is finished and
	// recorded within it (tmux calls take 5 s at most). Past it the
	// process exits at once (backstop).
	stopGrace = 10 * time.Second
)

// lifeBound is how long the command c may run, with the settings s;
// forever when it runs until stopped.
func lifeBound(c *cobra.Command, s config.Settings) (bound time.Duration, forever bool) {
	flag := func(name string) time.Duration {
		d, _ := c.Flags().GetDuration(name)
		return d
	}
	on := func(name string) bool {
		b, _ := c.Flags().GetBool(name)
		return b
	}
	// One delivery: the wait for a ready box, the wait for the pasted
	// text, the settle, the presses and the wait for proof.
	delivery := s.ReadyTimeout + 2*s.ConfirmTimeout + s.Settle + time.Duration(s.Retries)*s.Repress
	switch c.CommandPath() {
	case "agentmsg serve", "agentmsg mcp", "agentmsg top":
		return 0, true
	case "agentmsg inbox":
		return defaultLife, on("follow")
	case "agentmsg events":
		return defaultLife, on("follow")
	case "agentmsg board":
		return defaultLife, on("watch")
	case "agentmsg send":
		return delivery + lifeMargin + flag("wait-delivered"), false
	case "agentmsg reply", "agentmsg task assign":
		return delivery + lifeMargin, false
	case "agentmsg broadcast":
		return max(passLife, delivery+lifeMargin), false
	case "agentmsg deliver":
		if on("turn-end") {
			return TurnEndLimit + lifeMargin, false
		}
		return max(passLife, s.ReadyTimeout+lifeMargin), on("watch")
	case "agentmsg wait":
		return flag("timeout") + lifeMargin, flag("timeout") == 0
	case "agentmsg shutdown":
		return flag("timeout") + lifeMargin, false
	case "agentmsg workflow run":
		return flag("timeout") + lifeMargin, false
	case "agentmsg kill":
		return flag("grace") + lifeMargin, false
	}
	return defaultLife, false
}

// life is one run's life: the context its command runs in, the bound it
// was given, and the backstop that ends the process when the command
// outstays its end.
type life struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// startLife bounds c's context by its life (see lifeBound), and, when
// exit is set (a process of its own: not a run inside the daemon), ends
// the process stopGrace after that context ends if the command has not
// returned by then, saying so on stderr.
func startLife(c *cobra.Command, s config.Settings, errOut io.Writer, exit func(int)) *life {
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	l := &life{done: make(chan struct{})}
	if bound, forever := lifeBound(c, s); forever {
		l.ctx, l.cancel = context.WithCancel(ctx)
	} else {
		l.ctx, l.cancel = context.WithTimeoutCause(ctx, bound, &BoundError{Command: c.CommandPath(), Bound: bound})
	}
	c.SetContext(l.ctx)
	if exit != nil {
		go l.backstop(stopGrace, errOut, exit)
	}
	return l
}

// backstop ends the process grace after the life ended, unless the
// command has returned: whatever it still waits for (a system call that
// cannot be called off) must not keep it alive.
func (l *life) backstop(grace time.Duration, errOut io.Writer, exit func(int)) {
	select {
	case <-l.done:
		return
	case <-l.ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		fmt.Fprintf(errOut, "agentmsg: still running %s after it was stopped (%v); exiting now: what it had recorded is in the mailbox (agentmsg log)\n",
			grace, context.Cause(l.ctx))
		exit(ExitError)
	}
}

// end is called once the command has returned.
func (l *life) end() {
	if l == nil {
		return
	}
	close(l.done)
	l.cancel()
}
