package netlab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a tiny server and client to run inside the
// hosts (the machine may have no ping or nc): NETLAB_HELPER=serve ADDR NAME
// answers every connection to ADDR with NAME; NETLAB_HELPER=dial ADDR prints
// what ADDR answers.
func TestMain(m *testing.M) {
	switch os.Getenv("NETLAB_HELPER") {
	case "serve":
		os.Exit(serve(os.Args[1], os.Args[2]))
	case "dial":
		os.Exit(dial(os.Args[1]))
	}
	os.Exit(m.Run())
}

func serve(addr, name string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			return 1
		}
		io.WriteString(conn, name)
		conn.Close()
	}
}

func dial(addr string) int {
	got, err := ask(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(got)
	return 0
}

// ask connects to addr and returns what it says before closing.
func ask(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err
}

const helloPort = "7000"

// helperEnv runs the test binary as helper mode; a race-enabled binary
// would otherwise sleep a second at exit (GORACE atexit_sleep_ms).
func helperEnv(mode string) []string {
	return []string{"NETLAB_HELPER=" + mode, "GORACE=atexit_sleep_ms=0"}
}

// Every host reaches every host, and the test process reaches each.
func TestHostsReachEachOther(t *testing.T) {
	lab := New(t, 3)
	for _, h := range lab.Hosts {
		p, err := h.Start(helperEnv("serve"), os.Args[0], net.JoinHostPort(h.Addr, helloPort), h.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitListening(net.JoinHostPort(h.Addr, helloPort), p.Done(), 10*time.Second); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	for _, to := range lab.Hosts {
		addr := net.JoinHostPort(to.Addr, helloPort)
		if got, err := ask(addr); err != nil || got != to.Name {
			t.Errorf("from the root namespace, %s answered %q, %v; want %q", addr, got, err, to.Name)
		}
		for _, from := range lab.Hosts {
			out, err := from.Command(context.Background(), helperEnv("dial"), os.Args[0], addr).Output()
			if err != nil || string(out) != to.Name {
				t.Errorf("from %s, %s answered %q, %v; want %q", from.Name, addr, out, err, to.Name)
			}
		}
	}
}

// A process in a host sees only that host's network: lo, up, and eth0 with
// the host's address.
func TestHostSeesItsOwnNetwork(t *testing.T) {
	lab := New(t, 1)
	out, err := lab.Hosts[0].Command(context.Background(), nil, "ip", "-o", "-4", "addr", "show", "up").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 3 {
			got[f[1]] = f[3]
		}
	}
	want := map[string]string{"lo": "127.0.0.1/8", "eth0": lab.Hosts[0].Addr + "/24"}
	if !maps.Equal(got, want) {
		t.Errorf("the host's interfaces that are up, with their IPv4 addresses: %v; want %v", got, want)
	}
}

// After a lab's test, nothing of it remains: no namespace, link, process,
// directory or record, whether it was started through the lab or not.
func TestCleanupLeavesNothing(t *testing.T) {
	skipUnlessAble(t)
	var id string
	var pids []int
	// Ends the stray below if the lab did not, so that Wait cannot hang.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stray *exec.Cmd
	t.Run("lab", func(t *testing.T) {
		lab := New(t, 2)
		id = lab.ID
		p, err := lab.Hosts[0].Start(nil, "sleep", "600")
		if err != nil {
			t.Fatal(err)
		}
		stray = lab.Hosts[1].Command(ctx, nil, "sleep", "600")
		if err := stray.Start(); err != nil {
			t.Fatal(err)
		}
		pids = []int{p.Pid(), stray.Process.Pid}
	})
	assertGone(t, id, pids)
	cancel()
	stray.Wait()
}

// A run whose namespace cannot be emptied (here of a process that looks
// like a tmux client, which is never signalled) is kept whole, for a later
// sweep to retry: deleted, its namespace would hide the process for good.
func TestRemoveRunKeepsARunItCannotEmpty(t *testing.T) {
	lab := New(t, 1)
	client := filepath.Join(lab.Dir, "tmux")
	if out, err := exec.Command("cp", "/bin/sleep", client).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	p, err := lab.Hosts[0].Start(nil, client, "600")
	if err != nil {
		t.Fatal(err)
	}
	// Until ip netns exec has exec'd it, the process is "ip", which a
	// sweep kills like any other (the test failed 2 runs in 12 so).
	for deadline := time.Now().Add(5 * time.Second); readComm(p.Pid()) != "tmux"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in tmux client is %q after 5 s", readComm(p.Pid()))
		}
	}
	if _, err := removeRun(lab.ID, 300*time.Millisecond); err == nil {
		t.Errorf("removeRun emptied a namespace holding a tmux client")
	}
	if !slices.Contains(mustNames(t, allNamespaces), lab.Hosts[0].Name) || !ownerAlive(lab.ID) {
		t.Errorf("removeRun deleted a run it could not empty")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
}

// A run killed before its cleanup leaves its namespaces and processes
// behind; the next New removes them, and leaves a live run's alone.
func TestNewRemovesLeftoversOfDeadRun(t *testing.T) {
	live := New(t, 1)
	id, pid := abandonLab(t)
	if !slices.Contains(mustNames(t, allNamespaces), "am"+id+"h1") || !running(pid) {
		t.Fatalf("the killed run left nothing to remove (namespaces %v, pid %d running: %v)", mustNames(t, allNamespaces), pid, running(pid))
	}
	New(t, 1)
	assertGone(t, id, []int{pid})
	if !slices.Contains(mustNames(t, allNamespaces), live.Hosts[0].Name) || !ownerAlive(live.ID) {
		t.Errorf("a live lab's namespace or record was removed")
	}
}

// TestAbandonedLab is the run TestNewRemovesLeftoversOfDeadRun kills.
func TestAbandonedLab(t *testing.T) {
	if os.Getenv("NETLAB_ABANDON") == "" {
		t.Skip("run by TestNewRemovesLeftoversOfDeadRun, which kills it before its cleanup")
	}
	lab := New(t, 2)
	p, err := lab.Hosts[0].Start(nil, "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("abandoned %s %d\n", lab.ID, p.Pid())
	// Until the parent kills this process: it keeps stdin open till then.
	io.ReadAll(os.Stdin)
}

// abandonLab runs TestAbandonedLab in a child and SIGKILLs it once its lab
// runs, returning the lab's id and the pid of the process it left.
func abandonLab(t *testing.T) (id string, pid int) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestAbandonedLab$", "-test.v")
	child.Env = append(os.Environ(), "NETLAB_ABANDON=1")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "abandoned %s %d", &id, &pid); err == nil {
			return id, pid
		}
	}
	t.Fatalf("the abandoned run never said what it left (%v)", lines.Err())
	return "", 0
}

// assertGone fails t if anything of run id remains: a namespace, a link, its
// directory, its record, or a live process among pids.
func assertGone(t *testing.T, id string, pids []int) {
	t.Helper()
	for _, list := range []func() ([]string, error){allNamespaces, allLinks} {
		for _, n := range mustNames(t, list) {
			if strings.HasPrefix(n, "am"+id) {
				t.Errorf("%s remains", n)
			}
		}
	}
	for _, path := range []string{runDir(id), recordPath(id)} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s remains (%v)", path, err)
		}
	}
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("process %d still runs", pid)
		}
	}
}

func mustNames(t *testing.T, list func() ([]string, error)) []string {
	t.Helper()
	all, err := list()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// running reports whether pid is a live process: a zombie is dead, waiting
// only for its parent (here, maybe init) to reap it.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && syscall.Kill(pid, 0) == nil
}
