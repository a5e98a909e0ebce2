package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine bounds one message line on stdin, as the SDK's own stdio
// transport does.
const DefaultMaxLine = mcp.DefaultMaxLineLength

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
//
// Batches are refused: MCP removed them in protocol version 2025-06-18.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one line in bytes; 0 is DefaultMaxLine. A longer
	// line is answered with -32600 and skipped.
	MaxLine int
}

// Connect implements mcp.Transport.
func (s *Stdio) Connect(context.Context) (mcp.Connection, error) {
	max := s.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	c := &stdioConn{
		out:      s.Out,
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

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // calls read and not yet answered
	changed chan struct{}       // closed and replaced whenever pending shrinks
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

// Write writes msg as one line. A response takes its call off pending
// once written (or once writing failed: it will never be written).
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.answered(resp.ID)
		c.mu.Unlock()
	}
	return err
}

func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

// writeError answers a message the server never sees. id is the raw JSON
// id, nil when there is none to answer to (written as null).
func (c *stdioConn) writeError(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	if err == nil {
		_ = c.writeLine(data) // a broken stdout ends the session through the SDK's next write
	}
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// readLines reads In line by line until it ends or the connection closes,
// answering each malformed line and passing each valid message on.
func (c *stdioConn) readLines(r *bufio.Reader, max int) {
	for {
		line, tooLong, err := readLine(r, max)
		if tooLong {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes; skipped", max))
		} else if len(bytes.TrimSpace(line)) > 0 {
			msg, id, code, why := parseLine(line)
			if code != 0 {
				c.writeError(id, code, why)
			} else {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			c.eofErr = err
			close(c.eof)
			return
		}
	}
}

// readLine reads one line without its end (LF or CRLF). A line longer
// than max is read to its end and discarded (tooLong). err is set when
// the input ended (io.EOF) or failed; line holds what came before it.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // +2: the line's end
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if !tooLong && len(line) > max {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

// parseLine checks one line against JSON-RPC 2.0 as MCP uses it. On a
// failure it returns the JSON-RPC error code, a reason, and the raw id to
// answer to when the line had a usable one.
func parseLine(line []byte) (msg jsonrpc.Message, id json.RawMessage, code int, why string) {
	if !utf8.Valid(line) {
		return nil, nil, jsonrpc.CodeParseError, "parse error: the line is not UTF-8"
	}
	if !json.Valid(line) {
		return nil, nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value"
	}
	switch bytes.TrimSpace(line)[0] {
	case '{':
	case '[':
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported (MCP removed them in 2025-06-18); send one message per line"
	default:
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return nil, nil, jsonrpc.CodeParseError, "parse error: " + err.Error()
	}
	invalid := func(format string, a ...any) (jsonrpc.Message, json.RawMessage, int, string) {
		return nil, id, jsonrpc.CodeInvalidRequest, "invalid request: " + fmt.Sprintf(format, a...)
	}
	rawID, hasID := fields["id"]
	if hasID {
		if !validID(rawID) {
			return invalid("id must be a string or an integer, not %s", clip(rawID))
		}
		id = rawID
	}
	if v, ok := fields["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if p, ok := fields["params"]; ok {
		if firstByte(p) != '{' { // MCP has no positional params
			return invalid("params must be an object, not %s", clip(p))
		}
	}
	if m, ok := fields["method"]; ok {
		var method string
		if json.Unmarshal(m, &method) != nil || method == "" {
			return invalid("method must be a non-empty string, not %s", clip(m))
		}
	} else {
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		if !hasID || hasResult == hasError {
			return invalid("a message needs a method (a request) or an id and one of result or error (a response)")
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return invalid("%v", err)
	}
	return msg, nil, 0, ""
}

// validID: MCP ids are strings or numbers, never null; only integers
// that survive a float64 are kept, since the SDK stores numbers as int64.
func validID(raw json.RawMessage) bool {
	switch firstByte(raw) {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return false
		}
		return f == math.Trunc(f) && math.Abs(f) <= 1<<53
	}
	return false
}

func firstByte(raw json.RawMessage) byte {
	if t := bytes.TrimSpace(raw); len(t) > 0 {
		return t[0]
	}
	return 0
}

// clip shortens a raw JSON value for an error message.
func clip(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
