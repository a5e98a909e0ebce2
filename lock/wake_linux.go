package lock

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// dirWatch wakes a waiter as soon as a lock in the directory may have been
// let go: a holder removes its lock file and then closes it (IN_DELETE,
// then IN_CLOSE_WRITE; a holder that dies closes it too). Polling alone
// left a freed lock idle for up to pollMax, which with eight senders on
// one pane was a fifth of each message's time.
type dirWatch struct{ f *os.File }

// watchDir watches dir, or returns nil where inotify is not to be had
// (then waiters only poll).
func watchDir(dir string) *dirWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_DELETE|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil
	}
	// Non-blocking, so the runtime's poller serves it and read deadlines work.
	return &dirWatch{f: os.NewFile(uintptr(fd), "inotify "+dir)}
}

// wait returns when something happened in the directory (true), after d,
// or when ctx ends.
func (w *dirWatch) wait(ctx context.Context, d time.Duration) bool {
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return sleep(ctx, d)
	}
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(time.Now()) })
	defer stop()
	if ctx.Err() != nil {
		return false
	}
	var buf [4096]byte // whole events only; what they say does not matter
	n, _ := w.f.Read(buf[:])
	return n > 0
}

func (w *dirWatch) close() { w.f.Close() }
