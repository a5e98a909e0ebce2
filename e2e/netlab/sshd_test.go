package netlab

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Through the lab's sshd on host 2, `ssh -F Config Alias` logs in, and a
// forward from the root namespace reaches host 2's NATS node (its
// certificate holds 127.0.0.1 for this); the privilege separation dir the
// lab made goes when the lab does.
func TestSSHForwardReachesNATS(t *testing.T) {
	skipUnlessAble(t)
	_, privsepExisted := os.Stat(privsepDir)
	t.Run("lab", func(t *testing.T) {
		lab := New(t, 3)
		c := lab.StartNATS(NATSOptions{})
		s := lab.StartSSHD(lab.Hosts[1])
		if out, err := exec.Command("ssh", "-F", s.Config, s.Alias, "echo", "logged in").CombinedOutput(); err != nil || string(out) != "logged in\n" {
			t.Fatalf("ssh -F %s %s: %v\n%s", s.Config, s.Alias, err, out)
		}
		local := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
		forward(t, s, local, net.JoinHostPort(s.Host.Addr, strconv.Itoa(ClientPort)))
		u := c.Users[0]
		nc, err := nats.Connect("tls://"+local, nats.UserInfo(u.Name, u.Password), nats.RootCAs(c.CAFile()), nats.IgnoreDiscoveredServers())
		if err != nil {
			t.Fatalf("NATS through the forward: %v", err)
		}
		defer nc.Close()
		if got := nc.ConnectedServerName(); got != s.Host.label {
			t.Errorf("the forward reached NATS node %q, want %q", got, s.Host.label)
		}
		if _, err := nc.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
			t.Errorf("a JetStream request through the forward: %v", err)
		}
	})
	if _, err := os.Stat(privsepDir); os.IsNotExist(privsepExisted) && !os.IsNotExist(err) {
		t.Errorf("%s, which the lab made, remains (%v)", privsepDir, err)
	}
}

// forward runs `ssh -N -L local:remote` through s until t ends, when it
// stops it by its pid; it returns once local listens.
func forward(t *testing.T, s *SSHD, local, remote string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "ssh.log")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("ssh", "-F", s.Config, "-N", "-o", "ExitOnForwardFailure=yes", "-L", local+":"+remote, s.Alias)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		<-done
	})
	if err := waitListening(local, done, 10*time.Second); err != nil {
		b, _ := os.ReadFile(log)
		t.Fatalf("ssh -L %s:%s: %v\n%s", local, remote, err, b)
	}
}

// freePort is a TCP port of 127.0.0.1 that nothing listens on just now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
