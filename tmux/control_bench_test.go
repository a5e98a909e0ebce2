package tmux

import (
	"context"
	"testing"
)

// What one call costs through a tmux process and through the control
// client (go test -bench Calls ./tmux), one call at a time: a capture of
// the screen, and the calls of one send to a ready pane (the pane and its
// screen, a second look, load and paste, a look, the press, a look for
// proof), each its own command list.
func BenchmarkCalls(b *testing.B) {
	for _, mode := range []string{"exec", "control"} {
		setup := func(b *testing.B) (Client, Pane) {
			e, _ := testServer(b)
			if mode == "control" {
				if err := e.UseControl(startControl(b, e)); err != nil {
					b.Fatal(err)
				}
			}
			panes, err := e.SessionPanes(context.Background(), "agent-alpha-ana-2")
			if err != nil {
				b.Fatal(err)
			}
			return e.Pinned(panes[0]), panes[0]
		}
		b.Run(mode+"/capture", func(b *testing.B) {
			c, p := setup(b)
			ctx := context.Background()
			for b.Loop() {
				if _, err := c.Capture(ctx, p.ID, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/send", func(b *testing.B) {
			c, p := setup(b)
			e := c.(*Exec)
			ctx := context.Background()
			for b.Loop() {
				if _, _, err := e.SessionPanesScreen(ctx, p.Session); err != nil {
					b.Fatal(err)
				}
				for _, step := range []func() error{
					func() error { _, err := c.Capture(ctx, p.ID, 0); return err },
					func() error { return c.Paste(ctx, p.ID, "MSG_0123: hello") },
					func() error { _, err := c.Capture(ctx, p.ID, 0); return err },
					func() error { return c.SendBytes(ctx, p.ID, '\r') },
					func() error { _, err := c.Capture(ctx, p.ID, 0); return err },
				} {
					if err := step(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
