package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine bounds one message line on stdin, as the SDK's own stdio
// transport does.
const DefaultMaxLine = mcp.DefaultMaxLineLength

// DefaultMaxInFlight bounds the calls read and not yet answered on one
// connection: an agent has a few at a time, and a client that never reads
// its answers must not make the server hold every call it writes (100,000
// grew it past 600 MB).
const DefaultMaxInFlight = 64

// Stdio is the MCP stdio transport: one JSON-RPC message per line on In,
// one per line on Out. It stands in front of the SDK rather than using
// its IOTransport, for two things the SDK does not do:
//
//   - A line that is not a valid JSON-RPC 2.0 message (not JSON, not
//     UTF-8, not an object, a batch, an id that is null, fractional or
//     not a string or number, no method) is answered with error -32700
//     (parse) or -32600 (invalid request) and skipped; the server reads
//     on. The SDK ends the session at the first such line, stranding any
//     tool call in flight.
//   - When In ends, every request already read is answered before the
//     session ends: a client may write its requests and close stdin
//     (printf '...' | agentmsg mcp). The SDK cancels them instead.
//   - At most MaxInFlight calls are read and not yet answered: past it the
//     server reads no more of In until an answer is written, so a client
//     that writes faster than it reads is held back by its own pipe, and
//     one that never reads costs a bounded amount. A notification behind
//     the call held back (a cancellation) waits with it.
//
// Batches are refused: MCP removed them in protocol version 2025-06-18.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one line in bytes; 0 is DefaultMaxLine. A longer
	// line is answered with -32600 and skipped.
	MaxLine int
	// MaxInFlight bounds the calls read and not yet answered; 0 is
	// DefaultMaxInFlight.
	MaxInFlight int
}

// Connect implements mcp.Transport.
func (s *Stdio) Connect(context.Context) (mcp.Connection, error) {
	max := s.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	inFlight := s.MaxInFlight
	if inFlight <= 0 {
		inFlight = DefaultMaxInFlight
	}
	c := &stdioConn{
		out:      s.Out,
		inFlight: inFlight,
		incoming: make(chan jsonrpc.Message),
		eof:      make(chan struct{}),
		closed:   make(chan struct{}),
		pending:  map[jsonrpc.ID]bool{},
		changed:  make(chan struct{}),
	}
	go c.readLines(bufio.NewReaderSize(s.In, 64*1024), max)
	return c, nil
}

type stdioConn struct {
	writeMu sync.Mutex
	out     io.Writer

	incoming chan jsonrpc.Message // valid messages, in the order read
	eof      chan struct{}        // closed once In has ended and all of incoming was taken
	eofErr   error                // why In ended; read only after eof is closed

	closeOnce sync.Once
	closed    chan struct{}

	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // calls read and not yet answered
	changed  chan struct{}       // closed and replaced whenever pending shrinks
	inFlight int                 // the most pending may hold
}

func (c *stdioConn) SessionID() string { return "" }

// Read returns the next valid message. Once In has ended it returns
// io.EOF only when every call it returned has been answered (or was
// cancelled by the client), so that the session ends after its replies.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case msg := <-c.incoming:
			if err := c.room(ctx, msg); err != nil {
				return nil, err
			}
			if c.accept(msg) {
				return msg, nil
			}
		case <-c.eof:
			return nil, c.drained(ctx)
		}
	}
}

// accept tracks msg before the server sees it. A call whose id is still
// in flight is answered here and dropped: the SDK would drop its answer,
// and the session would wait for it forever.
func (c *stdioConn) accept(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		if c.pending[req.ID] {
			raw, _ := json.Marshal(req.ID.Raw())
			c.writeError(raw, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request id %s is already in use by a request not yet answered", raw))
			return false
		}
		c.pending[req.ID] = true
		return true
	}
	if req.Method == "notifications/cancelled" {
		// The client expects no answer to a call it cancelled.
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.answered(id)
			}
		}
	}
	return true
}

// room returns once msg may be taken in: at once unless it is a call and
// inFlight calls are unanswered, else when one of them is. Meanwhile
// nothing more is read from In (readLines waits to hand over its next
// message), which is the back-pressure on the client.
func (c *stdioConn) room(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); !ok || !req.IsCall() {
		return nil
	}
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n < c.inFlight {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return io.EOF
		case <-changed:
		}
	}
}

// answered drops id from pending; the caller holds mu.
func (c *stdioConn) answered(id jsonrpc.ID) {
	if !c.pending[id] {
		return
	}
	delete(c.pending, id)
	close(c.changed)
	c.changed = make(chan struct{})
}

// drained waits until no call is pending, then reports why In ended.
func (c *stdioConn) drained(ctx context.Context) error {
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			return c.eofErr
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return io.EOF
		case <-changed:
		}
	}
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
