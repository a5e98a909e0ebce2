package relay

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/safesock"
)

// ssh binds its control socket first as PATH.<16 letters>, and exits when
// that is too long for a socket path (104 bytes on macOS, 108 on Linux):
// a mailbox root deep enough gets no control socket, not a tunnel that
// never starts.
func TestTunnelControlSocketFits(t *testing.T) {
	t.Parallel()
	short := "/home/ana/.local/state/agentmsg/ssh"
	args := tunnelArgs(short, "tls://10.0.0.1:4222", config.Tunnel{Host: "box", SSH: "box", Port: 4223})
	if !slices.Contains(args, "ControlPath="+filepath.Join(short, "%C")) || !slices.Contains(args, "ControlMaster=auto") {
		t.Errorf("short root: %q, want a control socket", args)
	}
	// The longest directory whose control socket still fits, and one byte more.
	fits := "/" + strings.Repeat("d", safesock.MaxPathLen-1-17-41-1)
	if got := controlArgs(fits); !slices.Contains(got, "ControlMaster=auto") {
		t.Errorf("%d-byte dir: %q, want a control socket", len(fits), got)
	}
	long := fits + "d"
	got := controlArgs(long)
	if !slices.Equal(got, []string{"-o", "ControlMaster=no", "-o", "ControlPath=none"}) {
		t.Errorf("%d-byte dir: %q, want none", len(long), got)
	}
	if args := tunnelArgs(long, "b", config.Tunnel{SSH: "box", Port: 1}); args[len(args)-1] != "box" || !slices.Contains(args, "-R") {
		t.Errorf("tunnelArgs = %q", args)
	}
}
