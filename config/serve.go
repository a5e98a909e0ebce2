package config

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"

	"github.com/BurntSushi/toml"
)

// ServeSettings is the [serve] table: the daemon (agentmsg serve).
type ServeSettings struct {
	// Auto: a command that finds no daemon starts one and runs in it.
	Auto bool `toml:"auto" json:"auto"`
	// TCP is a loopback HOST:PORT the daemon also listens on (serve's
	// --tcp, when that is not given): where MCP clients reach /mcp, since
	// they speak HTTP over TCP, not over a Unix socket.
	TCP string `toml:"tcp" json:"tcp,omitempty"`
	// TokenFile holds the token every request over TCP but /mcp's must
	// carry (serve's --token-file, when that is not given).
	TokenFile string `toml:"token_file" json:"token_file,omitempty"`
}

const serveKeys = "auto, tcp, token_file"

func (l *Loaded) loadServe(md toml.MetaData, prim toml.Primitive, path string) error {
	var s ServeSettings
	if err := md.PrimitiveDecode(prim, &s); err != nil {
		return invalidf(`%s: [serve]: want auto = true or false, tcp = "127.0.0.1:PORT", token_file = "/absolute/path": %v`, path, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "serve" {
			return invalidf("%s: unknown key %q in [serve]; known: %s", path, k.String(), serveKeys)
		}
	}
	if s.TCP != "" {
		if err := checkLoopback(s.TCP); err != nil {
			return invalidf("%s: [serve] tcp = %q: %v", path, s.TCP, err)
		}
		if s.TokenFile == "" {
			return invalidf(`%s: [serve] tcp needs token_file = "/absolute/path": every request over TCP but /mcp (which takes each agent's own token) must carry the token in that file (made, mode 0600, when missing)`, path)
		}
	}
	if s.TokenFile != "" && !filepath.IsAbs(s.TokenFile) {
		return invalidf(`%s: [serve] token_file = %q: want an absolute path, such as "/home/you/.config/agentmsg/serve-token"`, path, s.TokenFile)
	}
	l.Serve = s
	return nil
}

// checkLoopback accepts HOST:PORT on this machine only: the config file
// never opens the daemon to the network (serve --tcp with --allow-remote
// does, and says so loudly).
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New(`want HOST:PORT, such as "127.0.0.1:7676"`)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New(`want a port from 1 to 65535, such as "127.0.0.1:7676"`)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return errors.New(`want a loopback address (127.0.0.1, [::1] or localhost); to listen beyond this machine run agentmsg serve --tcp HOST:PORT --allow-remote`)
	}
	return nil
}
