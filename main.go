// Command agentmsg types messages into AI coding agents running in tmux,
// submits them and confirms that the agent really received them.
package main

import (
	"os"

	"github.com/agentmsg/agentmsg/cmd"
)

func main() { os.Exit(cmd.Main()) }
