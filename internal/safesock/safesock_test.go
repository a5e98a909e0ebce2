package safesock

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shortDir is a private directory whose paths fit in sun_path.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ss")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestListenAndDialOwnSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "s.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (%v), want 0600", fi.Mode(), err)
	}
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 2)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Fatalf("read %q, %v", b, err)
	}
	if uid, err := PeerUID(c); err != nil || uid != os.Geteuid() {
		t.Errorf("PeerUID = %d, %v; want %d", uid, err, os.Geteuid())
	}
}

// What another user could leave where a client looks is refused before a
// byte is sent.
func TestCheckRefusesWhatIsNotOurs(t *testing.T) {
	dir := shortDir(t)
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(file); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a plain file: %v", err)
	}
	wide := filepath.Join(dir, "wide.sock")
	l, err := net.Listen("unix", wide)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(wide, 0o666)
	if err := Check(wide); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "mode 0666") {
		t.Errorf("a socket others may use: %v", err)
	}
	if err := Check(filepath.Join(dir, "none.sock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no socket: %v, want fs.ErrNotExist", err)
	}
	shared := shortDir(t)
	os.Chmod(shared, 0o777)
	in := filepath.Join(shared, "s.sock")
	if err := Check(in); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("a socket in a directory others can write to: %v", err)
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs.sock")
		l2, err := net.Listen("unix", theirs)
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		os.Chmod(theirs, 0o600)
		os.Chown(theirs, 65534, 65534)
		if err := Check(theirs); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("another user's socket: %v", err)
		}
	}
}

func TestCheckSocketNamesWhatIsWrong(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "s.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSocket(path, fi, os.Geteuid()); err != nil {
		t.Errorf("our own socket: %v", err)
	}
	if err := checkSocket(path, fi, os.Geteuid()+1); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "not by you") {
		t.Errorf("as another uid: %v", err)
	}
}

func TestTooLongAPathIsSaidSo(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", maxPathLen) + "/s.sock"
	if _, err := Listen(long); !errors.Is(err, ErrPathTooLong) {
		t.Errorf("Listen: %v", err)
	}
	if _, err := Dial(context.Background(), long); !errors.Is(err, ErrPathTooLong) {
		t.Errorf("Dial: %v", err)
	}
}
