package tmux

import "github.com/agentmsg/agentmsg/internal/shell"

// WatchCommand is the shell command a person runs to watch session on
// server without typing into it (read-only attach, exact target), quoted
// for a POSIX shell whatever the socket path and session name hold.
func WatchCommand(server Server, session string) string {
	return "tmux -S " + shell.Quote(server.Socket) + " attach -r -t " + shell.Quote("="+session)
}
