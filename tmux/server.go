package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Server names one tmux server by the path of its socket.
type Server struct {
	Socket string
}

// ErrBothSocketFlags is returned when -L and -S are both given.
var ErrBothSocketFlags = errors.New("use either -L NAME or -S PATH, not both")

// ResolveServer finds the socket tmux itself would use for the given flags:
// -S PATH as given; -L NAME in tmux's socket directory; else the server the
// caller runs in ($TMUX); else tmux's default server.
func ResolveServer(socketPath, socketName string, lookupEnv func(string) (string, bool)) (Server, error) {
	switch {
	case socketPath != "" && socketName != "":
		return Server{}, ErrBothSocketFlags
	case socketPath != "":
		abs, err := filepath.Abs(socketPath)
		if err != nil {
			return Server{}, fmt.Errorf("socket path %q: %w", socketPath, err)
		}
		return Server{Socket: abs}, nil
	case socketName != "":
		if strings.ContainsRune(socketName, '/') {
			return Server{}, fmt.Errorf("socket name %q must not contain '/': use -S PATH for a path", socketName)
		}
		return Server{Socket: filepath.Join(socketDir(lookupEnv), socketName)}, nil
	}
	// $TMUX is "socket,server-pid,session-index".
	if v, ok := lookupEnv("TMUX"); ok && v != "" {
		if sock, _, _ := strings.Cut(v, ","); sock != "" {
			return Server{Socket: sock}, nil
		}
	}
	return Server{Socket: filepath.Join(socketDir(lookupEnv), "default")}, nil
}

// socketDir mirrors tmux: ${TMUX_TMPDIR:-/tmp}/tmux-UID.
func socketDir(lookupEnv func(string) (string, bool)) string {
	base := "/tmp"
	if v, ok := lookupEnv("TMUX_TMPDIR"); ok && v != "" {
		base = v
	}
	if real, err := filepath.EvalSymlinks(base); err == nil {
		base = real
	}
	return filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid()))
}

// CallerSession names the session of the pane the caller runs in, read from
// the caller's own server ($TMUX, $TMUX_PANE); "" when not inside tmux.
func CallerSession(ctx context.Context, bin string, lookupEnv func(string) (string, bool)) (string, error) {
	tmuxVar, _ := lookupEnv("TMUX")
	pane, _ := lookupEnv("TMUX_PANE")
	sock, _, _ := strings.Cut(tmuxVar, ",")
	if sock == "" || pane == "" {
		return "", nil
	}
	c, err := NewExec(Server{Socket: sock}, bin)
	if err != nil {
		return "", err
	}
	out, err := c.run(ctx, "display-message", "-p", "-t", pane, "#{session_name}")
	return strings.TrimSpace(string(out)), err
}
