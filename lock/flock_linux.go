//go:build linux && !agentmsg_portable

package lock

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Who holds an flock, on Linux: the kernel's table of locks, /proc/locks.
// Darwin has no such table (flock_other.go).

// LockDevice is the device /proc/locks names for the flocks taken on files
// in dir, learnt by taking one on a file made there for the purpose: on
// some file systems (btrfs subvolumes) it is not the device stat gives. ok
// is false when the table does not show that lock (a file system that
// keeps its locks elsewhere, or no /proc): then nothing can be told there.
func LockDevice(dir string) (dev string, ok bool) {
	f, err := os.CreateTemp(dir, ".lockprobe*")
	if err != nil {
		return "", false
	}
	os.Remove(f.Name()) // the open file can still be locked, and leaves nothing behind
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return "", false
	}
	ino, err := inode(f)
	if err != nil {
		return "", false
	}
	me := os.Getpid()
	// The kernel writes the table in pieces as it is read, so a line can
	// be missed while others' locks come and go (seen with 1,500 writers
	// on one lock: 40 of them did not find their own): read it again.
	for range tableReads {
		found := false
		err = scanTable(func(pid int, d, i string) {
			if pid == me && i == ino {
				dev, found = d, true
			}
		})
		if err != nil {
			return "", false
		}
		if found {
			return dev, true
		}
	}
	return "", false
}

// tableReads is how often LockDevice reads /proc/locks for its own lock.
const tableReads = 5

// FlockHolders returns the pids the kernel names as holding an flock on
// f's file right now, from /proc/locks (dev is the file system's device
// there, see LockDevice): the process that took the lock, which may have
// exited while a process it started keeps the lock file open (shown as
// itself, or as 0 when its pid is freed or belongs to another pid
// namespace). Unlike a pid the holder writes into the file after taking
// the lock, it is never the last holder's. None means the lock is free,
// or changing hands.
func FlockHolders(f *os.File, dev string) ([]int, error) {
	ino, err := inode(f)
	if err != nil {
		return nil, err
	}
	var pids []int
	err = scanTable(func(pid int, d, i string) {
		if d == dev && i == ino {
			pids = append(pids, pid)
		}
	})
	return pids, err
}

// scanTable calls found with each holder of a lock in /proc/locks: its pid,
// and its file's device and inode as written there.
func scanTable(found func(pid int, dev, ino string)) error {
	table, err := os.Open("/proc/locks")
	if err != nil {
		return err
	}
	defer table.Close()
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
		if j < 0 || err != nil {
			continue
		}
		found(pid, fields[5][:j], fields[5][j+1:])
	}
	return sc.Err()
}

func inode(f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no inode for %s", f.Name())
	}
	return strconv.FormatUint(st.Ino, 10), nil
}
