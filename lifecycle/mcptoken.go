package lifecycle

import (
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/target"
)

// IssueMCPToken makes a token that makes its holder agent t on the
// daemon's MCP endpoint, recorded as issued for t's session (a later
// spawn of that session revokes it), and returns it with the KEY=VALUE
// that puts it in the session's environment: a settings file that several
// agents share (mcp install --http without --team and --from) sends the
// token in AGENTMSG_MCP_TOKEN, so that each agent is itself.
func IssueMCPToken(tokens *identity.Tokens, socket string, t target.Target) (token, env string, err error) {
	team, agent := target.Inbox(t)
	token, err = tokens.Issue(identity.Grant{Team: team, Name: agent, Session: t.Session, Socket: socket})
	if err != nil {
		return "", "", err
	}
	return token, identity.EnvVar + "=" + token, nil
}
