package target

// Inbox names the inbox of t: its team and agent name; team-less ralph
// agents live in team "ralph".
func Inbox(t Target) (team, agent string) {
	if t.IsRalph() {
		return RalphTeam, t.Agent()
	}
	return t.Team, t.Agent()
}

// InboxOwner is the agent whose inbox (or registry entry) team/agent is:
// the inverse of Inbox. ok is false when no agent's inbox has that name.
func InboxOwner(team, agent string) (t Target, ok bool) {
	if team == RalphTeam {
		team = "" // only a team-less ralph-<id> lives there
	}
	t, err := New(team, agent)
	return t, err == nil
}
