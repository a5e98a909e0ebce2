package serve

import (
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/service"
)

// The daemon serves MCP over Streamable HTTP at /mcp, so that one process
// serves every agent on the machine. Who a client is comes from its token
// (agentmsg mcp token TEAM NAME), never from what it says: each token has
// its own MCP handler, so a session id is only good with the token that
// opened it.

// MCPServer builds the MCP server of one caller (main hands in
// mcpserver.New: no front end imports another).
type MCPServer func(svc *service.Service, orchestrator bool) *mcp.Server

// mcpHandlers are the MCP handlers, one per token.
type mcpHandlers struct {
	mu     sync.Mutex
	tokens *identity.Tokens
	by     map[string]http.Handler // by token
}

func (d *Daemon) mcp(w http.ResponseWriter, r *http.Request) {
	if d.opts.MCP == nil {
		fail(w, http.StatusNotImplemented, errors.New("this daemon serves no MCP"))
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	grant, ok := d.mcps.tokens.Lookup(token)
	if !ok {
		unauthorized(w, "MCP needs an agent's token: Authorization: Bearer TOKEN (agentmsg mcp token TEAM NAME)")
		return
	}
	tokenShown(r.Context())
	h, err := d.mcpHandler(token, grant)
	if err != nil {
		fail(w, 0, err)
		return
	}
	h.ServeHTTP(w, r)
}

// mcpHandler is token's handler, made on its first request.
func (d *Daemon) mcpHandler(token string, g identity.Grant) (http.Handler, error) {
	d.mcps.mu.Lock()
	defer d.mcps.mu.Unlock()
	if h, ok := d.mcps.by[token]; ok {
		return h, nil
	}
	svc, err := d.backend.service(Caller{From: g.Name, Team: g.Team})
	if err != nil {
		return nil, err
	}
	srv := d.opts.MCP(svc, g.Orchestrator)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	d.mcps.by[token] = h
	return h, nil
}
