package lock

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// FlockHolders returns the pids the kernel names as holding an flock on
// f's file right now, from /proc/locks: the process that took the lock,
// which may have exited while a process it started keeps the lock file
// open (shown as itself, or as 0 when its pid is freed or belongs to
// another pid namespace). Unlike a pid the holder writes into the file
// after taking the lock, it is never the last holder's.
//
// Entries are matched by inode number, and by device where one matches:
// on some file systems (btrfs subvolumes) /proc/locks names a device that
// stat does not. A nil result with no error means no holder was found: the
// lock has just been let go, or the kernel's table does not show it.
func FlockHolders(f *os.File) ([]int, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("no inode for %s", f.Name())
	}
	table, err := os.Open("/proc/locks")
	if err != nil {
		return nil, err
	}
	defer table.Close()
	ino := strconv.FormatUint(st.Ino, 10)
	dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
	var same, other []int
	sc := bufio.NewScanner(table)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:9978649 0 EOF"; a waiter
		// blocked on it has "->" after the number. NFS shows flocks as
		// the POSIX locks it makes of them.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" && fields[1] != "POSIX" {
			continue
		}
		j := strings.LastIndexByte(fields[5], ':')
		pid, err := strconv.Atoi(fields[4])
		if j < 0 || fields[5][j+1:] != ino || err != nil {
			continue
		}
		d := fields[5][:j]
		if d == dev {
			same = append(same, pid)
		} else {
			other = append(other, pid)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(same) > 0 {
		return same, nil
	}
	return other, nil
}

// Command is the name of process pid's program ("" when it has none to
// show, having exited).
func Command(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TableShows reports whether /proc/locks shows the flocks taken on files
// in dir: one taken on a file made there for the purpose must be listed.
// Where it is not (a file system that keeps its locks elsewhere), no
// holder found says nothing.
func TableShows(dir string) bool {
	f, err := os.CreateTemp(dir, ".lockprobe*")
	if err != nil {
		return false
	}
	os.Remove(f.Name()) // the open file can still be locked, and leaves nothing behind
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	pids, err := FlockHolders(f)
	return err == nil && slices.Contains(pids, os.Getpid())
}
