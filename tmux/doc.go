// Package tmux is the only code in agentmsg that knows tmux's command line.
//
// Every call names its server by socket path (-S), so a delivery, its lock and
// its verdict all refer to exactly one server, whether the user gave -L, -S,
// runs inside tmux ($TMUX) or relies on tmux's default.
//
// Most calls go through a direct runner (one tmux process per call, with a
// context, stdin for data and tmux's stderr kept in a typed *Error). The
// project's chosen library, gotmux v0.5.0, is used where it is sound: listing
// session names (for completion). It is not used for panes or text: it has no
// -L, no literal send, no buffers, drops stderr, panics on pane titles
// containing its field separator "-:-", and on tmux 3.3a its server-info query
// comes back empty and panics (see shared/FIELD-NOTES.md).
package tmux
