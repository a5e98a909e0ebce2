package mcpserver

// Reading the stdio transport's input: lines, each checked against
// JSON-RPC 2.0 as MCP uses it before the server sees it.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
