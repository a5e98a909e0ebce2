// Command agentmsg types messages into AI coding agents running in tmux,
// submits them and confirms that the agent really received them.
package main

import (
	"os"

	"github.com/agentmsg/agentmsg/cmd"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/tui"
)

// main joins the front ends: the CLI runs the MCP server for agentmsg mcp
// and the terminal UI for agentmsg top.
func main() { os.Exit(cmd.Main(mcpserver.Serve, tui.Run)) }
