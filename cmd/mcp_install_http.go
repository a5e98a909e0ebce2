package cmd

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/integration"
	"github.com/agentmsg/agentmsg/target"
)

// mcpInstallHTTPRun is mcp install --http: an entry for the daemon's MCP
// endpoint, with one agent's new token or a reference to the token in
// each agent's environment.
func mcpInstallHTTPRun(o *MCPInstallOptions) error {
	endpoint, err := o.endpoint()
	if err != nil {
		return err
	}
	agent, err := o.agent()
	if err != nil {
		return err
	}
	h := &integration.MCPHTTP{URL: endpoint, TokenEnv: identity.EnvVar}
	switch {
	case agent.Name == "":
	case o.Print:
		h.Token = "<a new token of " + agent.Team + "/" + agent.Name + ", made when written>"
	default:
		if h.Token, err = o.Tokens.Issue(agent); err != nil {
			return fmt.Errorf("making %s/%s's token: %w", agent.Team, agent.Name, err)
		}
	}
	rep, err := o.install(integration.MCPInstall{HTTP: h})
	secret := agent.Name != "" && !o.Print
	if err != nil {
		if secret {
			_, _, _ = o.Tokens.Forget(h.Token) // nothing holds it
		}
		return installErr(redactSnippet(err, h.Token, agent))
	}
	revoked, rerr := o.revoke(rep.Replaced)
	if secret {
		rep.Diff = strings.ReplaceAll(rep.Diff, h.Token, "<new token, secret>")
	}
	for _, t := range rep.Replaced {
		rep.Diff = strings.ReplaceAll(rep.Diff, t, "<old token, revoked>")
	}
	if o.JSON() {
		entry := struct {
			URL      string `json:"url"`
			Agent    string `json:"agent,omitempty"`     // whose token the entry holds
			TokenEnv string `json:"token_env,omitempty"` // else where it takes one from
		}{URL: endpoint}
		if agent.Name != "" {
			entry.Agent = agent.Team + "/" + agent.Name
		} else {
			entry.TokenEnv = h.TokenEnv
		}
		writeJSON(&Factory{IO: o.IO}, struct {
			integration.Report
			Entry   any      `json:"entry"`
			Revoked []string `json:"revoked,omitempty"`
		}{rep.Report, entry, revoked})
		return rerr
	}
	if err := printInstall(o.IO, rep.Report, o.Print, "registered the daemon's MCP endpoint "+endpoint+" in "+rep.Path); err != nil {
		return err
	}
	o.printRevoked(revoked)
	switch {
	case o.Print:
	case secret:
		o.printSecret(rep.Report, agent)
	default:
		fmt.Fprintf(o.IO.Out, "each agent that uses it sends the token in its %s: agentmsg mcp token TEAM NAME makes one "+
			"(agentmsg spawn sets it when [serve] tcp is configured)\n", identity.EnvVar)
	}
	return rerr
}

// printSecret says that the file holds a token now, and that only its
// owner can read it (the install makes it 0600, whatever it was).
func (o *MCPInstallOptions) printSecret(rep integration.Report, agent identity.Grant) {
	path := rep.Path
	if rep.Target != "" {
		path = rep.Target
	}
	fmt.Fprintf(o.IO.Out, "%s now holds %s/%s's token, a secret: whoever reads it can message as %s "+
		"(keep it out of version control; agentmsg mcp token --revoke %s %s takes it back)\n",
		rep.Path, agent.Team, agent.Name, agent.Name, agent.Team, agent.Name)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(o.IO.Out, "its mode %o lets others read it: chmod 600 %s\n", fi.Mode().Perm(), path)
	} else if err == nil {
		fmt.Fprintf(o.IO.Out, "its mode is %o: only you can read it\n", fi.Mode().Perm())
	}
}

// endpoint is --url, else http://<[serve] tcp>/mcp.
func (o *MCPInstallOptions) endpoint() (string, error) {
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", usagef("mcp install --url %q: want the daemon's endpoint, such as http://127.0.0.1:7676/mcp", o.URL)
		}
		return o.URL, nil
	}
	cfg, err := o.Config()
	if err != nil {
		return "", err
	}
	if cfg.Serve.TCP == "" {
		return "", usagef("mcp install --http: where does the daemon listen? Agent CLIs speak MCP over HTTP on TCP, " +
			"not on the daemon's Unix socket: put [serve] tcp = \"127.0.0.1:7676\" and token_file = \"/absolute/path\" " +
			"in the config file (agentmsg config shows where it is) and run agentmsg serve, or give --url")
	}
	return "http://" + cfg.Serve.TCP + "/mcp", nil
}

// agent is whose token the entry holds: --team and --from, or neither (a
// file several agents share).
func (o *MCPInstallOptions) agent() (identity.Grant, error) {
	team, from := o.Env["AGENTMSG_TEAM"], o.Env["AGENTMSG_FROM"]
	if (team == "") != (from == "") {
		return identity.Grant{}, usagef("mcp install --http: give both --team and --from (a file for that one agent, " +
			"holding its token) or neither (a file agents share, each sending the token in its " + identity.EnvVar + ")")
	}
	if team == "" {
		return identity.Grant{}, nil
	}
	t, err := target.New(team, from)
	if err != nil {
		return identity.Grant{}, err
	}
	return identity.Grant{Team: team, Name: t.Agent(), Orchestrator: o.Orchestrator}, nil
}

// redactSnippet keeps a token agentmsg revoked out of the entry it shows
// to add by hand.
func redactSnippet(err error, token string, agent identity.Grant) error {
	var me *integration.MergeError
	if token != "" && errors.As(err, &me) {
		me.Snippet = strings.ReplaceAll(me.Snippet, token, "<the token agentmsg mcp token "+agent.Team+" "+agent.Name+" prints>")
	}
	return err
}
