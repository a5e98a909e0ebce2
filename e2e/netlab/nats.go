package netlab

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The ports of every NATS node, on its host's address.
const (
	ClientPort  = 4222
	ClusterPort = 6222
	MonitorPort = 8222 // https, for the lab's health checks
)

// natsReadyTimeout bounds how long a node may take to report healthy: to
// find a JetStream meta leader when the cluster forms, to catch up on its
// streams when it rejoins.
const natsReadyTimeout = 60 * time.Second

const natsModule = "github.com/nats-io/nats-server/v2"

// NATSOptions says who may connect to a lab's NATS cluster.
type NATSOptions struct {
	// Auth is an authorization {...} or accounts {...} block written as it
	// is into every node's config. When it is empty, Users are.
	Auth string
	// Users are the cluster's users when Auth is empty; none means one
	// user, "lab", with a random password (Cluster.Users has it).
	Users []User
}

// User is a NATS user with a password and, when given, the subjects it may
// publish to and subscribe to (nil allows all).
type User struct {
	Name, Password     string
	Publish, Subscribe []string
}

// Cluster is a NATS cluster with JetStream, one node per host of a lab, node
// i on Hosts[i]. Clients and routes speak TLS only, with certificates from a
// CA made for the lab (CAFile); routes also prove themselves with theirs.
type Cluster struct {
	Users []User // as configured; with NATSOptions.Auth, as the caller gave

	lab    *Lab
	bin    string
	pki    *pki
	health *http.Client
	mu     sync.Mutex
	nodes  []*node
}

type node struct {
	host *Host
	conf string
	proc *Proc // nil before the first start
}

// StartNATS starts a node on every host of the lab and waits until each
// reports itself healthy (JetStream has a meta leader), or fails the test.
func (l *Lab) StartNATS(opts NATSOptions) *Cluster {
	l.t.Helper()
	c, err := l.startNATS(opts)
	if err != nil {
		l.t.Fatalf("starting NATS on %d hosts: %v", len(l.Hosts), err)
	}
	return c
}

func (l *Lab) startNATS(opts NATSOptions) (*Cluster, error) {
	bin, err := natsServer()
	if err != nil {
		return nil, err
	}
	pki, err := newPKI(filepath.Join(l.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	auth, users := authBlock(opts)
	roots := x509.NewCertPool()
	roots.AddCert(pki.ca)
	c := &Cluster{
		Users: users,
		lab:   l,
		bin:   bin,
		pki:   pki,
		// No kept connection: the node behind it may be killed and started again.
		health: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: true,
		}},
	}
	for _, h := range l.Hosts {
		conf, err := c.writeConfig(h, auth)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, &node{host: h, conf: conf})
	}
	// All first, then wait: no node is healthy before a quorum runs.
	for i := range c.nodes {
		if err := c.start(i); err != nil {
			return nil, err
		}
	}
	for i := range c.nodes {
		if err := c.waitHealthy(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ClientURL is node i's client URL.
func (c *Cluster) ClientURL(i int) string {
	return "tls://" + net.JoinHostPort(c.nodes[i].host.Addr, strconv.Itoa(ClientPort))
}

// CAFile is the PEM file of the CA that signed every node's certificate.
func (c *Cluster) CAFile() string { return c.pki.caFile }

// KillNode kills node i with SIGKILL, as a crash would.
func (c *Cluster) KillNode(i int) error {
	c.mu.Lock()
	p := c.nodes[i].proc
	c.mu.Unlock()
	return p.Kill()
}

// StartNode starts node i again, on the store it had, and waits until it
// has rejoined and caught up (healthy).
func (c *Cluster) StartNode(i int) error {
	if err := c.start(i); err != nil {
		return err
	}
	return c.waitHealthy(i)
}

// Restart stops node i cleanly (SIGTERM, then SIGKILL after 10 s) and starts
// it again.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	p := c.nodes[i].proc
	c.mu.Unlock()
	if err := p.Stop(10 * time.Second); err != nil {
		return err
	}
	return c.StartNode(i)
}

// Reload gives every node the auth of opts and has it read its config
// again (SIGHUP), as an operator who adds a user does; a node started
// later starts with it too.
func (c *Cluster) Reload(opts NATSOptions) error {
	auth, users := authBlock(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if _, err := c.writeConfig(n.host, auth); err != nil {
			return err
		}
		if n.proc != nil && !n.proc.exited() {
			if err := syscall.Kill(n.proc.Pid(), syscall.SIGHUP); err != nil {
				return fmt.Errorf("reloading %s: %w", n.proc, err)
			}
		}
	}
	c.Users = users
	return nil
}

func (c *Cluster) start(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n.proc != nil && !n.proc.exited() {
		return fmt.Errorf("NATS node %d is running", i)
	}
	p, err := n.host.Start(nil, c.bin, "-c", n.conf)
	if err != nil {
		return err
	}
	n.proc = p
	return nil
}

// Health is node i's answer to /healthz?details=true right now, for a
// test to log when something failed.
func (c *Cluster) Health(i int) string {
	c.mu.Lock()
	host := c.nodes[i].host
	c.mu.Unlock()
	resp, err := c.health.Get("https://" + net.JoinHostPort(host.Addr, strconv.Itoa(MonitorPort)) + "/healthz?details=true")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.Status + " " + string(body)
}

// Monitor decodes node i's monitoring endpoint path ("varz", "jsz", ...)
// into v.
func (c *Cluster) Monitor(i int, path string, v any) error {
	c.mu.Lock()
	host := c.nodes[i].host
	c.mu.Unlock()
	resp, err := c.health.Get("https://" + net.JoinHostPort(host.Addr, strconv.Itoa(MonitorPort)) + "/" + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/%s on node %d: %s", path, i, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}

// MetaLeader is the server name ("h1", ...) of the cluster's JetStream
// meta leader as node i sees it ("" when it sees none).
func (c *Cluster) MetaLeader(i int) (string, error) {
	var doc struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := c.Monitor(i, "jsz", &doc); err != nil {
		return "", err
	}
	if doc.Meta == nil {
		return "", nil
	}
	return doc.Meta.Leader, nil
}

// waitHealthy polls node i's /healthz until it answers 200: JetStream is
// up, has a meta leader and every stream and consumer on it is current.
func (c *Cluster) waitHealthy(i int) error {
	c.mu.Lock()
	host, p := c.nodes[i].host, c.nodes[i].proc
	c.mu.Unlock()
	url := "https://" + net.JoinHostPort(host.Addr, strconv.Itoa(MonitorPort)) + "/healthz"
	deadline := time.Now().Add(natsReadyTimeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("NATS node %d exited (%v); see %s", i, p.Err(), p.Log)
		}
		resp, err := c.health.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("NATS node %d not healthy after %s: %s", i, natsReadyTimeout, last)
}

// writeConfig writes node h's config: TLS on every listener, JetStream, the
// routes to every other host, and auth. Values are JSON, which NATS's config
// syntax accepts, so no path or password needs quoting by hand.
func (c *Cluster) writeConfig(h *Host, auth string) (string, error) {
	// 127.0.0.1 and localhost too: a client may come through a tunnel.
	cert, key, err := c.pki.issue(h.label, []net.IP{net.ParseIP(h.Addr), net.IPv4(127, 0, 0, 1)}, []string{"localhost", h.Name})
	if err != nil {
		return "", err
	}
	tlsConf := map[string]any{"cert_file": cert, "key_file": key, "ca_file": c.pki.caFile, "timeout": 5}
	routeTLS := map[string]any{"verify": true}
	for k, v := range tlsConf {
		routeTLS[k] = v
	}
	var routes []string
	for _, o := range c.lab.Hosts {
		if o != h {
			routes = append(routes, "tls://"+net.JoinHostPort(o.Addr, strconv.Itoa(ClusterPort)))
		}
	}
	settings := []struct {
		key   string
		value any
	}{
		{"server_name", h.label},
		{"listen", net.JoinHostPort(h.Addr, strconv.Itoa(ClientPort))},
		{"https", net.JoinHostPort(h.Addr, strconv.Itoa(MonitorPort))},
		{"tls", tlsConf},
		{"jetstream", map[string]any{"store_dir": filepath.Join(h.Dir, "nats"), "max_memory_store": 64 << 20, "max_file_store": 1 << 30}},
		{"cluster", map[string]any{
			"name":   "netlab",
			"listen": net.JoinHostPort(h.Addr, strconv.Itoa(ClusterPort)),
			"tls":    routeTLS,
			"routes": routes,
		}},
	}
	var b strings.Builder
	for _, s := range settings {
		v, err := json.Marshal(s.value)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s: %s\n", s.key, v)
	}
	b.WriteString(auth)
	path := filepath.Join(h.Dir, "nats-server.conf")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// authBlock is the auth part of every node's config, and the users it has.
func authBlock(opts NATSOptions) (string, []User) {
	if opts.Auth != "" {
		return opts.Auth + "\n", opts.Users
	}
	users := opts.Users
	if len(users) == 0 {
		users = []User{{Name: "lab", Password: randomHex(16)}}
	}
	var list []map[string]any
	for _, u := range users {
		entry := map[string]any{"user": u.Name, "password": u.Password}
		perms := map[string]any{}
		if u.Publish != nil {
			perms["publish"] = map[string]any{"allow": u.Publish}
		}
		if u.Subscribe != nil {
			perms["subscribe"] = map[string]any{"allow": u.Subscribe}
		}
		if len(perms) > 0 {
			entry["permissions"] = perms
		}
		list = append(list, entry)
	}
	b, _ := json.Marshal(map[string]any{"users": list})
	return "authorization: " + string(b) + "\n", users
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var natsBuild struct {
	once sync.Once
	path string
	err  error
}

// natsServer is the nats-server binary of go.mod's version, built once per
// process and kept in the Go build cache by version, so that later runs
// skip the build.
func natsServer() (string, error) {
	natsBuild.once.Do(func() { natsBuild.path, natsBuild.err = buildNATSServer() })
	return natsBuild.path, natsBuild.err
}

func buildNATSServer() (string, error) {
	version, err := goOutput("list", "-m", "-f", "{{.Version}}", natsModule)
	if err != nil {
		return "", err
	}
	cache, err := goOutput("env", "GOCACHE")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "agentmsg-netlab")
	bin := filepath.Join(dir, "nats-server-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Built under a name of its own, then renamed: a run beside this one
	// never starts a half-written binary.
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	if _, err := goOutput("build", "-o", tmp, natsModule); err != nil {
		return "", err
	}
	return bin, os.Rename(tmp, bin)
}

func goOutput(args ...string) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command("go", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
