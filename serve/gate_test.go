package serve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
)

// gatedServer serves d's authorize in front of a handler that answers
// 200, on a loopback TCP listener behind the gate.
func gatedServer(t *testing.T, token string) (addr string, g *tcpGate) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g = newTCPGate(l)
	d := &Daemon{token: []byte(token)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	srv := &http.Server{Handler: d.authorize(ok), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout, ConnContext: withConn}
	go srv.Serve(g)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), g
}

func get(t *testing.T, conn net.Conn, token string) (status int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://agentmsg/v1/version", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// closed reports whether the server closed conn within a few seconds.
func closed(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := conn.Read(make([]byte, 1))
	return err == io.EOF || err != nil && !strings.Contains(err.Error(), "timeout")
}

// Connections that never show the token cannot crowd out one that does:
// past maxPending, each newcomer closes the oldest one waiting, and the
// count stays bounded however many are opened.
func TestGateKeepsRoomForTheToken(t *testing.T) {
	const token = "0123456789abcdef0123"
	addr, g := gatedServer(t, token)
	var idle []net.Conn
	for range maxPending + 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := get(t, c, token); got != http.StatusOK {
		t.Fatalf("with the token, beside %d idle connections: %d", len(idle), got)
	}
	if !closed(idle[0]) {
		t.Error("the oldest idle connection was kept open")
	}
	g.mu.Lock()
	pending, open := g.pending.Len(), g.open
	g.mu.Unlock()
	if pending > maxPending || open > maxPending+1 {
		t.Errorf("%d pending and %d open connections, want at most %d and %d", pending, open, maxPending, maxPending+1)
	}
	// The one with the token is not pending any more: a flood after it
	// does not close it.
	for range maxPending + 10 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if got := get(t, c, token); got != http.StatusOK {
		t.Errorf("the token's connection after a second flood: %d", got)
	}
}

// A request without the token is answered 401 and its connection closed,
// not kept alive for the next guess.
func TestGateClosesAfterA401(t *testing.T) {
	addr, _ := gatedServer(t, "0123456789abcdef0123")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := get(t, c, "wrong-token-wrong-token"); got != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", got)
	}
	if !closed(c) {
		t.Error("the connection stayed open after its 401")
	}
}

// A peer beyond this machine has few pending connections of its own, and
// when every connection has shown a token the gate lets no more in.
func TestGateBoundsPerPeerAndInAll(t *testing.T) {
	g := &tcpGate{maxConns: 4, maxPending: 3, maxPerPeer: 2, perPeer: map[string]int{}}
	remote := func(ip string) net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return addrConn{a, &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}}
	}
	x1, x2, x3 := g.admit(remote("10.0.0.1")), g.admit(remote("10.0.0.1")), g.admit(remote("10.0.0.1"))
	if x1 == nil || x2 == nil || x3 == nil || !x1.gone || x2.gone || g.perPeer["10.0.0.1"] != 2 {
		t.Fatalf("a third pending connection of one peer: the first not closed (gone %v), or counts %v", x1.gone, g.perPeer)
	}
	y := g.admit(remote("10.0.0.2"))
	x2.shownToken()
	x3.shownToken()
	y.shownToken()
	z := g.admit(remote("10.0.0.3"))
	z.shownToken()
	if g.open != 4 {
		t.Fatalf("open = %d, want 4", g.open)
	}
	if g.admit(remote("10.0.0.4")) != nil {
		t.Error("a fifth connection was let in past maxConns with none pending to close")
	}
	z.Close()
	if g.admit(remote("10.0.0.4")) == nil {
		t.Error("no room after one closed")
	}
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// The TCP token file is read only when another user cannot have chosen
// it: never through a link, never another user's, never from a directory
// others can write to; a new one is never written through a link.
func TestTokenFileOthersCouldControlIsRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	tok, err := readToken(good)
	if err != nil || len(tok) != 64 {
		t.Fatalf("a new token: %q, %v", tok, err)
	}
	if again, err := readToken(good); err != nil || string(again) != string(tok) {
		t.Fatalf("read again: %q, %v", again, err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	if _, err := readToken(link); err == nil {
		t.Error("a token file that is a symbolic link was read")
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "elsewhere"), dangling)
	if _, err := readToken(dangling); err == nil {
		t.Error("a new token was written through a dangling link")
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the link's target was made")
	}
	open := t.TempDir()
	os.Chmod(open, 0o777)
	if _, err := readToken(filepath.Join(open, "token")); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("a token file in a directory others can write to: %v", err)
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs")
		os.WriteFile(theirs, []byte("0123456789abcdef0123\n"), 0o600)
		os.Chown(theirs, 65534, 65534)
		if _, err := readToken(theirs); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("another user's token file: %v", err)
		}
	}
}

// A daemon started in an agent's pane (AGENTMSG_FROM and AGENTMSG_TEAM in
// its own environment) does not make that agent of every caller that
// names none: such a caller is "app", or the config file's "from".
func TestDaemonsOwnEnvironmentIsNoCallersIdentity(t *testing.T) {
	root := t.TempDir()
	lookup := func(k string) (string, bool) {
		switch k {
		case "AGENTMSG_HOME":
			return root, true
		case "AGENTMSG_FROM":
			return "ana", true
		case "AGENTMSG_TEAM":
			return "alpha", true
		}
		return "", false
	}
	cfg, err := config.Load(lookup, filepath.Join(root, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(app.Env{LookupEnv: lookup, Config: cfg}, "test", false)
	svc, err := b.service(Caller{Socket: filepath.Join(root, "tmux.sock")})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Name != "app" || svc.Team != "" {
		t.Errorf("a caller that names no one is %q of team %q, want \"app\" of none", svc.Name, svc.Team)
	}
	svc, err = b.service(Caller{From: "lead", Team: "beta", Socket: filepath.Join(root, "tmux.sock")})
	if err != nil || svc.Name != "lead" || svc.Team != "beta" {
		t.Errorf("a caller that names itself: %v, %+v", err, svc)
	}
}
