package wire

// Whoami is who the caller is to agentmsg (whoami), and where each part
// came from: a flag, the environment, the config file or the tmux session
// it runs in.
type Whoami struct {
	Name       string `json:"name"`
	NameSource string `json:"name_source"`
	Team       string `json:"team"`
	TeamSource string `json:"team_source,omitempty"`
	// Sender is the upper-case name in the caller's message ids.
	Sender string    `json:"sender"`
	Tmux   *CallerIn `json:"tmux,omitempty"`
}

// CallerIn is the tmux pane the caller runs in.
type CallerIn struct {
	Socket  string `json:"socket"`
	Pane    string `json:"pane"`
	Session string `json:"session,omitempty"`
	// Agent: the session is an agent's (agent-<team>-<name>).
	Agent bool `json:"agent_session"`
}

// Prime is the block an agent puts in its instructions (prime), and who
// it is for.
type Prime struct {
	Name         string `json:"name"`
	Team         string `json:"team"`
	Instructions string `json:"instructions"`
}
