package tmux

import "strings"

// WatchCommand is the shell command a person runs to watch session on
// server without typing into it (read-only attach, exact target), quoted
// for a POSIX shell whatever the socket path and session name hold.
func WatchCommand(server Server, session string) string {
	return "tmux -S " + ShellQuote(server.Socket) + " attach -r -t " + ShellQuote("="+session)
}

// ShellQuote quotes s for a POSIX shell: as it is when it holds only
// characters no shell reads specially, else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
