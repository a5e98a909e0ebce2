package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ServeTCP has the server's daemon also listen on loopback TCP, as
// [serve] tcp in its config file says (with token_file in the server's
// dir), where agent CLIs reach its MCP endpoint: it adds the table to the
// config, (re)starts the daemon and waits until the port answers. It
// returns the address. The caller stops the daemon (StopDaemon; Close
// does too).
func (s *Server) ServeTCP() (string, error) {
	// A port the kernel gave and took back: free unless something takes
	// it in between, and then the daemon says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	f, err := os.OpenFile(s.ConfigPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, "\n[serve]\ntcp = %q\ntoken_file = %q\n", addr, filepath.Join(s.Dir, "serve-token"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := s.StopDaemon(); err != nil {
		return "", err
	}
	if err := s.StartDaemon(); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(StartTimeout); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "logs", "daemon.log"))
			return "", fmt.Errorf("the daemon did not listen on %s within %s: %v\n%s", addr, StartTimeout, err, b)
		}
	}
}
