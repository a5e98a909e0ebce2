package netlab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recordDir holds one file per lab in use, named by its id, saying which
// process owns it. It lives on /run, which a reboot empties together with
// the namespaces it speaks of.
const recordDir = "/run/agentmsg-netlab"

// ourName matches every namespace and link a lab makes and captures its id.
var ourName = regexp.MustCompile(`^am([0-9a-f]{6})(?:[hvp][0-9]+|br)$`)

// emptyTimeout bounds the wait for a namespace's processes to die.
const emptyTimeout = 10 * time.Second

func runDir(id string) string     { return filepath.Join(os.TempDir(), "agentmsg-netlab-"+id) }
func recordPath(id string) string { return filepath.Join(recordDir, id) }

// writeRecord records this process (pid and start time, which a reused pid
// does not share) as the owner of run id. The record appears whole or not at
// all (a link of a finished file), so no reader takes a half-written one for
// a dead owner; it fails with an error satisfying os.IsExist when id is
// taken.
func writeRecord(id string) error {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return err
	}
	tmp := filepath.Join(recordDir, fmt.Sprintf(".%s-%d", id, pid))
	// The last run to end removes the dir; one may do so between our
	// MkdirAll and WriteFile.
	for range 3 {
		if err := os.MkdirAll(recordDir, 0o755); err != nil {
			return err
		}
		err = os.WriteFile(tmp, fmt.Appendf(nil, "%d %s\n", pid, start), 0o644)
		if !os.IsNotExist(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, recordPath(id))
}

// startTime is field 22 of /proc/PID/stat: when the process started, in
// clock ticks since boot.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return fields[19], nil
}

// ownerAlive reports whether run id's recorded owner still runs.
func ownerAlive(id string) bool {
	b, err := os.ReadFile(recordPath(id))
	if err != nil {
		return false
	}
	var pid int
	var start string
	if _, err := fmt.Sscan(string(b), &pid, &start); err != nil {
		return false
	}
	now, err := startTime(pid)
	return err == nil && now == start
}

// sweep removes what earlier runs left behind when they were killed before
// their cleanup: every run whose owner is gone. A record is made before a
// run's first namespace and removed after its last, so a run without one is
// gone too.
func sweep(t testing.TB) {
	t.Helper()
	ids, err := runIDs()
	if err != nil {
		t.Logf("netlab: looking for leftovers of earlier runs: %v", err)
		return
	}
	for _, id := range ids {
		if ownerAlive(id) {
			continue
		}
		found, err := removeRun(id, emptyTimeout)
		if err != nil {
			t.Logf("netlab: removing the leftovers of run %s: %v", id, err)
			continue
		}
		t.Logf("netlab: removed the leftovers of run %s, whose owner is gone (processes killed: %d)", id, len(found))
	}
}

// runIDs is every run id that has a namespace, a link, a record or a
// directory.
func runIDs() ([]string, error) {
	nss, err := names(allNamespaces)
	if err != nil {
		return nil, err
	}
	links, err := names(allLinks)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range append(nss, links...) {
		ids = append(ids, ourName.FindStringSubmatch(n)[1])
	}
	records, _ := filepath.Glob(filepath.Join(recordDir, "[0-9a-f]*"))
	dirs, _ := filepath.Glob(runDir("*"))
	for _, p := range append(records, dirs...) {
		ids = append(ids, strings.TrimPrefix(filepath.Base(p), "agentmsg-netlab-"))
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// allNamespaces and allLinks list every namespace and every link of the
// root namespace.
func allNamespaces() ([]string, error) {
	var nss []struct {
		Name string `json:"name"`
	}
	err := ipJSON(&nss, "netns", "list")
	var out []string
	for _, n := range nss {
		out = append(out, n.Name)
	}
	return out, err
}

func allLinks() ([]string, error) {
	var links []struct {
		IfName string `json:"ifname"`
	}
	err := ipJSON(&links, "link", "show")
	var out []string
	for _, l := range links {
		out = append(out, l.IfName)
	}
	return out, err
}

// names is list's names that a lab makes.
func names(list func() ([]string, error)) ([]string, error) {
	all, err := list()
	return slices.DeleteFunc(all, func(n string) bool { return !ourName.MatchString(n) }), err
}

// removeRun deletes every trace of run id: it kills what still runs in its
// namespaces, deletes its links (a veth's root end takes its pair along, at
// once, where deleting a namespace lets the kernel take it later), its
// namespaces, its directory and its record. It returns the processes it
// found running, described. It waits up to timeout for them to die.
func removeRun(id string, timeout time.Duration) (found []string, err error) {
	notOfRun := func(n string) bool { return !strings.HasPrefix(n, "am"+id) }
	nss, errN := names(allNamespaces)
	links, errL := names(allLinks)
	if err := errors.Join(errN, errL); err != nil {
		return nil, err
	}
	nss = slices.DeleteFunc(nss, notOfRun)
	links = slices.DeleteFunc(links, notOfRun)
	// A namespace deleted with a process in it would hide that process
	// from every later sweep: the run stays whole for the next to retry.
	if found, err = emptyNamespaces(nss, timeout); err != nil {
		return found, err
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, ip("link", "del", l))
	}
	for _, ns := range nss {
		errs = append(errs, ip("netns", "del", ns))
	}
	errs = append(errs, os.RemoveAll(runDir(id)))
	if err := os.Remove(recordPath(id)); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	// Only when no other run is recorded; an error here just means one is.
	os.Remove(recordDir)
	return found, errors.Join(errs...)
}

// emptyNamespaces kills every process in nss and waits until they are gone.
// A tmux client is never signalled (before tmux 3.7 its early death can crash
// its server, see tmux/doc.go): it leaves by itself once its server, killed
// here, is gone.
func emptyNamespaces(nss []string, timeout time.Duration) (found []string, err error) {
	for _, ns := range nss {
		for _, pid := range namespacePids(ns) {
			comm := readComm(pid)
			found = append(found, fmt.Sprintf("%d (%s) in %s", pid, comm, ns))
			if !isTmuxClient(comm) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for _, ns := range nss {
		for len(namespacePids(ns)) > 0 {
			if time.Now().After(deadline) {
				return found, fmt.Errorf("processes %v still run in namespace %s after %s", namespacePids(ns), ns, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return found, nil
}

// namespacePids is every live process in namespace ns (ip netns pids skips
// zombies, which hold no namespace).
func namespacePids(ns string) []int {
	out, _ := ipOutput("netns", "pids", ns)
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// isTmuxClient reports whether comm names a tmux client: the server renames
// itself "tmux: server", a client keeps "tmux" or becomes "tmux: client".
func isTmuxClient(comm string) bool {
	return strings.HasPrefix(comm, "tmux") && comm != "tmux: server"
}
