// Command agentmsg types messages into AI coding agents running in tmux,
// submits them and confirms that the agent really received them.
package main

import (
	"context"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/cmd"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/serve"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tui"
)

// main joins the front ends: the CLI runs the MCP server for agentmsg mcp,
// the daemon for agentmsg serve and the terminal UI for agentmsg top, and
// the daemon runs the CLI's commands for the clients that forward them.
func main() {
	os.Exit(cmd.Main(cmd.FrontEnds{MCP: mcpserver.Serve, Serve: daemon, Top: top}))
}

func daemon(ctx context.Context, env app.Env, o cmd.ServeOptions) error {
	return serve.Run(ctx, env, serve.Options{Socket: o.Socket, TCP: o.TCP, TokenFile: o.TokenFile,
		AllowRemote: o.AllowRemote, Direct: o.Direct, Version: o.Version, Commit: o.Commit, Date: o.Date,
		RunCLI: cmd.RunIn, Ready: func(at serve.Listening) {
			if o.Ready != nil {
				o.Ready(at.Socket, at.TCP)
			}
		},
		MCP: func(svc *service.Service, orchestrator bool) *mcp.Server { return mcpserver.New(*svc, orchestrator) }})
}

func top(ctx context.Context, svc *service.Service, o cmd.TopUIOptions) error {
	return tui.Run(ctx, svc, tui.RunOptions(o))
}
