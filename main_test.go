package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/cmd"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/tmux"
)

// These run `agentmsg mcp` in-process as main wires it: the CLI with the
// MCP server that main hands it (neither front end imports the other).

// testFactory is a factory with buffers for streams and only the given
// environment, the real MCP server, and no way to reach tmux.
func testFactory(t *testing.T, env map[string]string) (*cmd.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f := cmd.NewFactory(&cmd.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, lookup)
	f.ServeMCP = mcpserver.Serve
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		return nil, errors.New("this test must not reach tmux")
	}
	return f, &out, &errOut
}

// agentmsg mcp serves the tools on its stdin and stdout, as the caller
// AGENTMSG_FROM of AGENTMSG_TEAM, and ends when the client closes stdin.
func TestMCPServesStdio(t *testing.T) {
	home := t.TempDir()
	store := mailbox.New(home)
	server, _ := tmux.ResolveServer("", "", func(string) (string, bool) { return "", false })
	host, _ := os.Hostname()
	store.Place = mailbox.Place{Host: host, Socket: server.Socket} // tmux's default server, as the command finds it
	f, _, errOut := testFactory(t, map[string]string{"AGENTMSG_HOME": home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f.IO.In, f.IO.Out = inR, outW
	done := make(chan int, 1)
	go func() {
		code := cmd.Run(context.Background(), f, []string{"mcp"})
		outW.Close()
		done <- code
	}()

	b, err := store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(mailbox.Envelope{ID: "MSG_LEAD_0000aaaa", From: "lead", To: "ana", Type: mailbox.TypeText, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("check_messages: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"content":"hello"`) || !strings.Contains(string(raw), `"message_id":"MSG_LEAD_0000aaaa"`) {
		t.Fatalf("check_messages: %s", raw)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 13 {
		t.Fatalf("agent mode lists %d tools (%v)", len(tools.Tools), err)
	}
	// The caller is on the board, so that others can message it by name.
	board, _ := store.Board("alpha")
	if len(board) != 1 || board[0].Agent != "ana" {
		t.Errorf("board: %+v", board)
	}
	cs.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, errOut)
		}
	case <-ctx.Done():
		t.Fatal("agentmsg mcp did not end when its stdin closed")
	}
}

// A malformed line gets a JSON-RPC error and the server reads on; when
// stdin ends right after the requests, each is answered before agentmsg
// mcp exits (issue 10, item 14).
func TestMCPMalformedLinesAndEarlyEOF(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`,
		`{`,
		`{}`,
		"\xff\xfe\x00",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`,
		`[]`,
		`   `,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":"v","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"x"}`,
		`{"jsonrpc":"2.0","id":"m","method":5}`,
		`{"jsonrpc":"2.0","id":"r"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\r",
		`{"jsonrpc":"2.0","id":"s","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check_messages","arguments":{}}}`,
	}
	f, out, errOut := testFactory(t, map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	f.IO.In = strings.NewReader(strings.Join(lines, "\n") + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := cmd.Run(ctx, f, []string{"mcp"}); code != 0 || ctx.Err() != nil {
		t.Fatalf("exit %d (%v); stderr: %s", code, ctx.Err(), errOut)
	}
	type reply struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	byID := map[string]reply{}
	var anonymous []int
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r reply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not a JSON-RPC reply: %q", l)
		}
		if string(r.ID) == "null" {
			if r.Error == nil {
				t.Fatalf("a reply without id and error: %q", l)
			}
			anonymous = append(anonymous, r.Error.Code)
			continue
		}
		byID[string(r.ID)] = r
	}
	want := []int{-32700, -32700, -32600, -32700, -32600, -32600, -32600, -32600, -32600}
	if !slices.Equal(anonymous, want) {
		t.Errorf("errors without an id: %v, want %v", anonymous, want)
	}
	for id, code := range map[string]int{`"v"`: -32600, `"p"`: -32600, `"m"`: -32600, `"r"`: -32600} {
		if r := byID[id]; r.Error == nil || r.Error.Code != code {
			t.Errorf("request %s: %+v, want error %d", id, r, code)
		}
	}
	for _, id := range []string{"1", "2", `"s"`, "3"} {
		if r, ok := byID[id]; !ok || r.Error != nil || len(r.Result) == 0 {
			t.Errorf("request %s was not answered with a result: %+v", id, r)
		}
	}
	if tools := string(byID["2"].Result); !strings.Contains(tools, `"wait_for_message"`) {
		t.Errorf("tools/list: %s", tools)
	}
	if len(byID) != 8 {
		t.Errorf("%d replies with an id, want 8:\n%s", len(byID), out)
	}
}
