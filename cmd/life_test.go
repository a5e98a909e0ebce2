package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
)

// lifeOf parses args as the command line would and returns the bound of
// the command it names.
func lifeOf(t *testing.T, s config.Settings, args ...string) (time.Duration, bool) {
	t.Helper()
	f, _, _ := testFactory(nil)
	root := NewCmdRoot(f)
	c, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return lifeBound(c, s)
}

// Every command has a bound on its life, from its flags and settings;
// only those that run until stopped have none (docs/exit-codes.md).
func TestEveryCommandHasABound(t *testing.T) {
	s := config.Defaults()
	delivery := s.ReadyTimeout + 2*s.ConfirmTimeout + s.Settle + time.Duration(s.Retries)*s.Repress
	cases := []struct {
		args    []string
		bound   time.Duration
		forever bool
	}{
		{args: []string{"send", "alpha", "ana", "hi"}, bound: delivery + lifeMargin},
		{args: []string{"send", "--mailbox-only", "alpha", "ana", "hi"}, bound: delivery + lifeMargin},
		{args: []string{"send", "--wait-delivered", "5m", "alpha", "ana", "hi"}, bound: delivery + lifeMargin + 5*time.Minute},
		{args: []string{"reply", "MSG_ANA_00000000", "hi"}, bound: delivery + lifeMargin},
		{args: []string{"broadcast", "alpha", "hi"}, bound: passLife},
		{args: []string{"deliver"}, bound: passLife},
		{args: []string{"deliver", "--turn-end"}, bound: TurnEndLimit + lifeMargin},
		{args: []string{"deliver", "--watch"}, forever: true},
		{args: []string{"wait"}, bound: 30*time.Second + lifeMargin},
		{args: []string{"wait", "--timeout", "10m"}, bound: 10*time.Minute + lifeMargin},
		{args: []string{"wait", "--timeout", "0"}, forever: true},
		{args: []string{"shutdown", "--wait", "alpha", "ana"}, bound: time.Minute + lifeMargin},
		{args: []string{"workflow", "run", "alpha"}, bound: defaultWorkflowTimeout + lifeMargin},
		{args: []string{"kill", "alpha", "ana"}, bound: 5*time.Second + lifeMargin},
		{args: []string{"inbox"}, bound: defaultLife},
		{args: []string{"inbox", "--follow"}, forever: true},
		{args: []string{"events"}, forever: true},
		{args: []string{"events", "--follow=false"}, bound: defaultLife},
		{args: []string{"board", "--watch"}, forever: true},
		{args: []string{"claim", "REQ_00000000"}, bound: defaultLife},
		{args: []string{"serve"}, forever: true},
		{args: []string{"mcp"}, forever: true},
		{args: []string{"top"}, forever: true},
	}
	for _, c := range cases {
		bound, forever := lifeOf(t, s, c.args...)
		if forever != c.forever || !forever && bound != c.bound {
			t.Errorf("%s: bound %s, forever %v; want %s, %v", strings.Join(c.args, " "), bound, forever, c.bound, c.forever)
		}
	}
	// And every other command, with its defaults, has one.
	f, _, _ := testFactory(nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() {
			return
		}
		bound, forever := lifeBound(c, s)
		switch c.CommandPath() {
		case "agentmsg serve", "agentmsg mcp", "agentmsg top", "agentmsg events":
			return
		}
		if forever || bound <= 0 || bound > 25*time.Hour {
			t.Errorf("%s: bound %s, forever %v", c.CommandPath(), bound, forever)
		}
	}
	walk(NewCmdRoot(f))
}

// A command's life ends at its bound, with a cause that says so.
func TestALifeEndsAtItsBound(t *testing.T) {
	f, _, _ := testFactory(nil)
	c, _, err := NewCmdRoot(f).Find([]string{"claim"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetContext(context.Background())
	s := config.Defaults()
	l := startLife(c, s, io.Discard, nil)
	defer l.end()
	deadline, ok := c.Context().Deadline()
	if !ok || time.Until(deadline) > defaultLife || time.Until(deadline) < defaultLife-time.Minute {
		t.Fatalf("claim's context: deadline %v, %v; want about %s from now", deadline, ok, defaultLife)
	}
}

// A command that does not return once its life has ended (a system call
// that cannot be called off) is ended by the backstop, which says so;
// one that returns in time is not.
func TestTheBackstopEndsACommandThatOverstays(t *testing.T) {
	for _, returns := range []bool{false, true} {
		ctx, cancel := context.WithCancelCause(context.Background())
		l := &life{ctx: ctx, cancel: func() { cancel(nil) }, done: make(chan struct{})}
		var errOut bytes.Buffer
		exited := make(chan int, 1)
		go l.backstop(50*time.Millisecond, &errOut, func(code int) { exited <- code })
		cancel(&Stopped{Signal: syscall.SIGTERM})
		if returns {
			l.end()
		}
		select {
		case code := <-exited:
			if returns {
				t.Fatalf("the backstop ended a command that had returned (exit %d)", code)
			}
			if code != ExitError || !strings.Contains(errOut.String(), "still running") || !strings.Contains(errOut.String(), "SIGTERM received") {
				t.Errorf("exit %d, stderr %q", code, errOut.String())
			}
		case <-time.After(time.Second):
			if !returns {
				t.Fatal("the backstop did not end a command that overstayed")
			}
		}
		if !returns {
			l.end()
		}
	}
}

// SIGHUP (a closed terminal) ends a command as SIGINT and SIGTERM do,
// with the signal as the cause; before, it killed the process on the
// spot, with nothing recorded or said.
func TestAHangupEndsTheCommand(t *testing.T) {
	ctx, stop := signalContext(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not end the command's context")
	}
	var st *Stopped
	if cause := context.Cause(ctx); !errors.As(cause, &st) || st.Signal != syscall.SIGHUP || cause.Error() != "SIGHUP received" {
		t.Fatalf("cause %v, want SIGHUP received", cause)
	}
}

// A message read from a pipe that is never closed ends with the command.
func TestReadingStdinEndsWithTheCommand(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(20*time.Millisecond, func() { cancel(&Stopped{Signal: syscall.SIGTERM}) })
	done := make(chan error, 1)
	go func() {
		_, err := messageText(ctx, &IOStreams{In: r}, "", true)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "SIGTERM received") {
			t.Fatalf("messageText: %v, want the signal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading stdin still waits after the command's end")
	}
}
