package profile

import "github.com/agentmsg/agentmsg/delivery"

// Shell reads a pane whose foreground program is a shell. Typed text would
// run as a command, so no screen of it is ever Ready.
type Shell struct{}

func (Shell) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if lastIsShellPrompt(lines) {
		return shellReading()
	}
	return unknown("a shell is in the foreground (no prompt on screen), not an agent")
}

// Generic is delivery.Generic (a Claude-like ruled box, or "> " on the last
// line) that also knows a shell prompt when it sees one.
type Generic struct{}

func (Generic) Read(screen []string) delivery.Reading {
	if lastIsShellPrompt(trimScreen(screen)) {
		return shellReading()
	}
	return delivery.Generic{}.Read(screen)
}
