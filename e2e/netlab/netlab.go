// Package netlab builds a small network of hosts on one machine for tests:
// each host is a network namespace with an address of its own, joined to the
// others by a veth pair onto one bridge in the root namespace, which the test
// process (in the root namespace) reaches too. On top of it run a real NATS
// cluster, one node per host (StartNATS), and OpenSSH's sshd (StartSSHD):
//
//	lab := netlab.New(t, 3)
//	c := lab.StartNATS(netlab.NATSOptions{})  // c.ClientURL(i), c.CAFile(), c.Users
//	s := lab.StartSSHD(lab.Hosts[1])          // ssh -F s.Config s.Alias
//	p, err := lab.Hosts[0].Start(env, "agentmsg", "serve")
//	err = c.KillNode(0); err = lab.Hosts[2].LinkDown()
//
// It needs root and iproute2 (ip netns); without them New skips the test.
// Everything a lab makes is named am<id>...: its namespaces am<id>h1..., its
// links am<id>v1... and am<id>br, its directory agentmsg-netlab-<id> under
// the temp dir. Its owner (pid and start time) is recorded under recordDir
// before anything is made and removed after everything is, so a later New
// can tell the leftovers of a killed run, which it removes, from a lab still
// in use. That takes every run on a machine to share one pid namespace.
package netlab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Lab is a network of hosts that lives as long as its test.
type Lab struct {
	ID    string  // six hex digits in every name the lab gives
	Dir   string  // the lab's temp dir: logs, stores, keys, host dirs
	Hosts []*Host // Hosts[0] is h1, at .1 of the lab's /24

	t           testing.TB
	subnet      subnet
	mu          sync.Mutex
	procs       []*Proc // every process Start started
	started     int     // len(procs) and those being started: numbers logs
	madePrivsep bool    // whether this lab made sshd's privilege separation dir
}

// Host is one network namespace with one address on the lab's bridge.
type Host struct {
	Name string // the namespace's name, unique per run
	Addr string // its IPv4 address on the bridge
	Dir  string // a directory of its own under the lab's

	lab   *Lab
	label string // h1, h2, ...: short, for log names and NATS server names
	veth  string // the root namespace's end of its veth pair
}

// New builds a lab of n hosts for t, after removing the leftovers of earlier
// runs whose owner is gone. Everything it makes is undone when t ends.
func New(t testing.TB, n int) *Lab {
	t.Helper()
	skipUnlessAble(t)
	sweep(t)
	id, err := claimID()
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{ID: id, Dir: runDir(id), t: t}
	// Registered before anything is made: a build that fails half-way is
	// undone like a whole one, by name.
	t.Cleanup(l.close)
	if err := l.build(n); err != nil {
		t.Fatalf("building a lab of %d hosts: %v", n, err)
	}
	return l
}

// skipUnlessAble skips t when this process cannot make namespaces.
func skipUnlessAble(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netlab needs root: it makes network namespaces, veth pairs and a bridge")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("netlab needs `ip netns` (iproute2, e.g. apt-get install iproute2): %v %s", err, out)
	}
}

// claimID picks a fresh run id and records this process as its owner.
func claimID() (string, error) {
	for range 10 {
		b := make([]byte, 3)
		rand.Read(b)
		id := hex.EncodeToString(b)
		switch err := writeRecord(id); {
		case err == nil:
			return id, nil
		case !os.IsExist(err):
			return "", err
		}
	}
	return "", fmt.Errorf("no free run id under %s after 10 tries", recordDir)
}

func (l *Lab) build(n int) error {
	if err := os.MkdirAll(filepath.Join(l.Dir, "logs"), 0o700); err != nil {
		return err
	}
	var err error
	if l.subnet, err = addBridge(l.bridge()); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		h, err := l.addHost(i)
		if err != nil {
			return err
		}
		l.Hosts = append(l.Hosts, h)
	}
	return nil
}

func (l *Lab) bridge() string { return "am" + l.ID + "br" }

// addHost makes host i: its namespace with lo up, and a veth pair whose
// root end is a port of the bridge and whose other end is the host's eth0.
func (l *Lab) addHost(i int) (*Host, error) {
	h := &Host{
		Name:  fmt.Sprintf("am%sh%d", l.ID, i),
		Addr:  l.subnet.host(i),
		Dir:   filepath.Join(l.Dir, fmt.Sprintf("h%d", i)),
		lab:   l,
		label: fmt.Sprintf("h%d", i),
		veth:  fmt.Sprintf("am%sv%d", l.ID, i),
	}
	if err := os.Mkdir(h.Dir, 0o700); err != nil {
		return nil, err
	}
	peer := fmt.Sprintf("am%sp%d", l.ID, i)
	err := ipAll(
		[]string{"netns", "add", h.Name},
		[]string{"-n", h.Name, "link", "set", "lo", "up"},
		[]string{"link", "add", h.veth, "type", "veth", "peer", "name", peer, "netns", h.Name},
		[]string{"link", "set", h.veth, "master", l.bridge(), "up"},
		[]string{"-n", h.Name, "link", "set", peer, "name", "eth0"},
		[]string{"-n", h.Name, "addr", "add", h.Addr + "/24", "dev", "eth0"},
		[]string{"-n", h.Name, "link", "set", "eth0", "up"},
	)
	return h, err
}

// Command is a command that runs inside h's namespace, with env added to
// this process's environment (later entries win). It leads a process group
// of its own, which ctx's end kills whole.
func (h *Host) Command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// LinkDown cuts h off the network, as a pulled cable would: the bridge's end
// of its veth goes down, so packets vanish without an answer; h keeps lo and
// its own address.
func (h *Host) LinkDown() error { return ip("link", "set", h.veth, "down") }

// LinkUp puts h back on the network.
func (h *Host) LinkUp() error { return ip("link", "set", h.veth, "up") }

// close kills what the lab started, then removes every trace of it,
// killing too what still runs in its namespaces (what a test ran with
// Command and left, an sshd's connection, which leaves sshd's group).
func (l *Lab) close() {
	l.mu.Lock()
	procs, madePrivsep := l.procs, l.madePrivsep
	l.mu.Unlock()
	for _, p := range procs {
		if err := p.Kill(); err != nil {
			l.t.Errorf("netlab: stopping %s: %v", p, err)
		}
	}
	if l.t.Failed() {
		l.logTails()
	}
	found, err := removeRun(l.ID, emptyTimeout)
	if err != nil {
		l.t.Errorf("netlab: removing lab %s: %v", l.ID, err)
	}
	if len(found) > 0 {
		l.t.Logf("netlab: still running in lab %s at its end, killed: %v", l.ID, found)
	}
	if madePrivsep {
		os.Remove(privsepDir)
	}
}
