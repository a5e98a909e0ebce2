package serve

import (
	"container/list"
	"context"
	"net"
	"sync"
)

// The daemon's TCP listener is reachable by every local user (and, with
// --allow-remote, by other machines), and a connection costs it a file
// descriptor whether or not its peer knows the token. Without bounds a
// peer that opened connections and kept them (a 401 answered over
// keep-alive, or no request at all) ran the daemon out of descriptors, and
// then accept failed on the owner's Unix socket too. So TCP connections
// pass a gate:
//
//   - one that has not yet shown a token is pending: a request without
//     the token is answered 401 and its connection closed; one that says
//     nothing is closed by the server's ReadHeaderTimeout;
//   - pending connections are few (maxPending), and fewer still per remote
//     address beyond this machine (maxPendingPerPeer): a new one makes
//     room by closing the oldest pending one, so holding connections open
//     gains an attacker nothing, and a client with the token, which sends
//     its request at once, gets in;
//   - all connections together are bounded (maxConns), far below the
//     descriptor limit, so the Unix socket always has descriptors left.
//
// On loopback every local user has the same address, so the per-peer
// bound applies only to other machines; locally the pending bound and the
// oldest-first eviction are what protect the owner's clients.

// Gate bounds: see above.
const (
	maxConns          = 1024
	maxPending        = 256
	maxPendingPerPeer = 16
)

// tcpGate is a TCP listener with the gate in front of it.
type tcpGate struct {
	net.Listener
	maxConns, maxPending, maxPerPeer int

	mu      sync.Mutex
	open    int
	pending list.List // of *gatedConn, oldest first
	perPeer map[string]int
}

func newTCPGate(l net.Listener) *tcpGate {
	return &tcpGate{Listener: l, maxConns: maxConns, maxPending: maxPending, maxPerPeer: maxPendingPerPeer, perPeer: map[string]int{}}
}

// gatedConn is a connection through the gate.
type gatedConn struct {
	net.Conn
	gate *tcpGate
	peer string        // remote host; "" for loopback (no per-peer bound)
	elem *list.Element // in gate.pending until it shows a token; nil after
	gone bool          // released: counted no more
}

func (g *tcpGate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// admit lets c in as pending, closing the oldest pending connections that
// stand in its way; nil when the gate is full of connections that have
// shown a token (c is closed then).
func (g *tcpGate) admit(c net.Conn) *gatedConn {
	peer := remotePeer(c.RemoteAddr())
	var evicted []*gatedConn
	g.mu.Lock()
	if peer != "" {
		for g.perPeer[peer] >= g.maxPerPeer {
			evicted = append(evicted, g.evictOldest(peer))
		}
	}
	for (g.pending.Len() >= g.maxPending || g.open >= g.maxConns) && g.pending.Len() > 0 {
		evicted = append(evicted, g.evictOldest(""))
	}
	var gc *gatedConn
	if g.open < g.maxConns {
		gc = &gatedConn{Conn: c, gate: g, peer: peer}
		gc.elem = g.pending.PushBack(gc)
		g.perPeer[peer]++
		g.open++
	}
	g.mu.Unlock()
	for _, e := range evicted {
		e.Conn.Close()
	}
	if gc == nil {
		c.Close()
	}
	return gc
}

// evictOldest releases the oldest pending connection (of peer, when not
// ""), for the caller to close. g.mu is held; one exists.
func (g *tcpGate) evictOldest(peer string) *gatedConn {
	for e := g.pending.Front(); e != nil; e = e.Next() {
		gc := e.Value.(*gatedConn)
		if peer == "" || gc.peer == peer {
			g.release(gc)
			return gc
		}
	}
	panic("serve: no pending connection to evict")
}

// release stops counting gc. g.mu is held.
func (g *tcpGate) release(gc *gatedConn) {
	if gc.gone {
		return
	}
	gc.gone = true
	g.open--
	g.unpend(gc)
}

// unpend takes gc off the pending list. g.mu is held.
func (g *tcpGate) unpend(gc *gatedConn) {
	if gc.elem == nil {
		return
	}
	g.pending.Remove(gc.elem)
	gc.elem = nil
	if g.perPeer[gc.peer]--; g.perPeer[gc.peer] <= 0 {
		delete(g.perPeer, gc.peer)
	}
}

func (gc *gatedConn) Close() error {
	gc.gate.mu.Lock()
	gc.gate.release(gc)
	gc.gate.mu.Unlock()
	return gc.Conn.Close()
}

// shownToken marks gc as a connection whose peer knows a token: it is no
// longer pending, so it is never evicted for a newcomer.
func (gc *gatedConn) shownToken() {
	gc.gate.mu.Lock()
	gc.gate.unpend(gc)
	gc.gate.mu.Unlock()
}

// remotePeer is a's host, or "" for loopback.
func remotePeer(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta.IP.IsLoopback() {
		return ""
	}
	return ta.IP.String()
}

// connKey is the context key of a request's connection (http.Server's
// ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// tokenShown tells the gate that the connection of a request that carried
// a valid token knows it; a no-op for the Unix socket's connections.
func tokenShown(ctx context.Context) {
	if gc, ok := ctx.Value(connKey{}).(*gatedConn); ok {
		gc.shownToken()
	}
}
