package serve

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

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
	by     map[string]*mcpHandler // by token
}

// mcpHandler is one token's MCP server, with what ends its requests and
// streams the moment the token is revoked.
type mcpHandler struct {
	http.Handler
	ctx    context.Context
	cancel context.CancelFunc
}

// revokedEvery is how often the daemon looks for revoked tokens among
// those with a handler: a stream opened with one (an MCP client's GET,
// or a long tool call) ends within that time of the revocation; any new
// request with it is refused at once.
const revokedEvery = time.Second

func (d *Daemon) mcp(w http.ResponseWriter, r *http.Request) {
	if d.opts.MCP == nil {
		fail(w, http.StatusNotImplemented, errors.New("this daemon serves no MCP"))
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	grant, ok := d.mcps.tokens.Lookup(token)
	if !ok {
		d.mcps.drop(token)
		unauthorized(w, "MCP needs an agent's token: Authorization: Bearer TOKEN (agentmsg mcp token TEAM NAME)")
		return
	}
	tokenShown(r.Context())
	h, err := d.mcpHandler(token, grant)
	if err != nil {
		fail(w, 0, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel) // revoked: this request ends too
	defer stop()
	h.ServeHTTP(w, r.WithContext(ctx))
}

// drop ends token's handler, and every request and stream it serves.
func (m *mcpHandlers) drop(token string) {
	m.mu.Lock()
	h, ok := m.by[token]
	delete(m.by, token)
	m.mu.Unlock()
	if ok {
		h.cancel()
	}
}

// dropRevoked drops the handlers whose tokens are revoked, every
// revokedEvery, until ctx ends.
func (m *mcpHandlers) dropRevoked(ctx context.Context) {
	tick := time.NewTicker(revokedEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.Lock()
		var gone []string
		for token := range m.by {
			if _, ok := m.tokens.Lookup(token); !ok {
				gone = append(gone, token)
			}
		}
		m.mu.Unlock()
		for _, token := range gone {
			m.drop(token)
		}
	}
}

// mcpHandler is token's handler, made on its first request.
func (d *Daemon) mcpHandler(token string, g identity.Grant) (*mcpHandler, error) {
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
	ctx, cancel := context.WithCancel(d.ctx)
	h := &mcpHandler{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), ctx: ctx, cancel: cancel}
	d.mcps.by[token] = h
	return h, nil
}
