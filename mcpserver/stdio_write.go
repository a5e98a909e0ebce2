package mcpserver

// Writing the stdio transport's output: one message a line, and the
// answers to lines the server never sees.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
