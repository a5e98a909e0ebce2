package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pid is this process's id.
func pid() int { return os.Getpid() }

// unitName is the systemd user unit agentmsg serve --install writes.
const unitName = "agentmsg.service"

// unitText is the unit that runs the daemon. KillMode=process: on stop,
// systemd signals the daemon alone, which detaches its tmux control
// clients cleanly; the default (control-group) would signal those tmux
// clients too, and a tmux client killed early can take a tmux server
// before 3.7 down (see tmux/doc.go).
func unitText(exe string) string {
	return fmt.Sprintf(`[Unit]
Description=agentmsg daemon: messages for the AI coding agents in tmux

[Service]
ExecStart=%s serve
KillMode=process
Restart=on-failure
RestartSec=1

[Install]
WantedBy=default.target
`, systemdQuote(exe))
}

// systemdQuote quotes a path for an ExecStart line.
func systemdQuote(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// installUnit writes the user unit and starts it, where systemd runs.
func installUnit(ctx context.Context, f *Factory) error {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return errors.New("systemd is not here (no systemctl): start agentmsg serve another way, e.g. from your shell's profile")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	dir := filepath.Join(configHome(f.LookupEnv), "systemd", "user")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, unitName)
	if err := os.WriteFile(path, []byte(unitText(exe)), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"--user", "daemon-reload"}, {"--user", "enable", "--now", unitName}} {
		if out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	fmt.Fprintf(f.IO.Out, "installed %s and started it (systemctl --user status %s)\n", path, unitName)
	return nil
}

// configHome is $XDG_CONFIG_HOME, else ~/.config.
func configHome(lookupEnv func(string) (string, bool)) string {
	if v, ok := lookupEnv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return v
	}
	home, _ := lookupEnv("HOME")
	return filepath.Join(home, ".config")
}
