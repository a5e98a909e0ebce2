package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmsg/agentmsg/hosts"
)

// hosts add writes the new host's key (0600, once) and prints the user
// entry with exactly a host's permissions and the host's [hosts] table.
func TestHostsAddWritesAKeyOnce(t *testing.T) {
	dir := t.TempDir()
	f, out, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"hosts", "add", "build-1"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	key := filepath.Join(dir, "agentmsg", "hosts", "build-1.nk")
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v %v", key, fi, err)
	}
	seed, _ := os.ReadFile(key)
	if !strings.HasPrefix(string(seed), "SU") {
		t.Errorf("key file holds %q, want a user seed", seed)
	}
	for _, want := range []string{`"agentmsg.*.*.build-1"`, `"_INBOX_build-1.>"`, `name = "build-1"`, "nkey_file = " + `"` + key + `"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	f, _, errOut = testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"hosts", "add", "build-1"}); code != ExitUsage || !strings.Contains(errOut.String(), "has a key already") {
		t.Fatalf("a second add: exit %d, %s", code, errOut)
	}
	if again, _ := os.ReadFile(key); string(again) != string(seed) {
		t.Error("a second add overwrote the key")
	}
	f, _, errOut = testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"hosts", "add", "Bad.Name"}); code != ExitUsage || !strings.Contains(errOut.String(), "invalid host name") {
		t.Fatalf("a bad name: exit %d, %s", code, errOut)
	}
}

// Without a daemon there is no link: hosts says how to get one.
func TestHostsWithoutTheDaemon(t *testing.T) {
	f, _, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()})
	if code := Run(context.Background(), f, []string{"hosts"}); code != ExitError || !strings.Contains(errOut.String(), "agentmsg serve") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// hosts init makes the operator's key; with it named in the config, hosts
// add makes the new host's stream on the bus as agentmsg makes it (the
// host's own user may make none), and hosts provision puts right one
// changed by hand.
func TestHostsAddMakesTheStreamAsTheOperator(t *testing.T) {
	dir := t.TempDir()
	f, out, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"--json", "hosts", "init"}); code != ExitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	var doc struct {
		KeyFile string `json:"nkey_file"`
		Public  string `json:"nkey"`
		User    string `json:"nats_user"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || !strings.Contains(doc.User, `"$JS.API.STREAM.CREATE.*"`) || strings.Contains(doc.User, `agentmsg.`) {
		t.Fatalf("init: %v\n%s", err, out)
	}
	pub, sub := hosts.AdminPermissions()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"), NoSigs: true, NoLog: true,
		Nkeys: []*server.NkeyUser{{Nkey: doc.Public, Permissions: &server.Permissions{Publish: &server.SubjectPermission{Allow: pub}, Subscribe: &server.SubjectPermission{Allow: sub}}}}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("no bus")
	}
	defer srv.Shutdown()
	cfg := filepath.Join(dir, "agentmsg", "config.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[hosts]\nnats = %q\nadmin_nkey_file = %q\n", srv.ClientURL(), doc.KeyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out, errOut = testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"hosts", "add", "build-1"}); code != ExitOK {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "made AGENTMSG_build-1") {
		t.Errorf("add says nothing of the stream:\n%s", out)
	}
	nc, err := nats.Connect(srv.ClientURL(), mustNkey(t, doc.KeyFile), nats.CustomInboxPrefix("_INBOX__agentmsg_admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, "AGENTMSG_build-1")
	if err != nil {
		t.Fatal(err)
	}
	cfgOn := s.CachedInfo().Config
	if len(cfgOn.Subjects) != 1 || cfgOn.Subjects[0] != "agentmsg.*.build-1.*" || cfgOn.Retention != jetstream.WorkQueuePolicy {
		t.Fatalf("stream config %+v", cfgOn)
	}
	cfgOn.RePublish = &jetstream.RePublish{Source: "agentmsg.*.build-1.*", Destination: "agentmsg.msg.x.y"}
	if _, err := js.UpdateStream(ctx, cfgOn); err != nil {
		t.Fatal(err)
	}
	f, out, errOut = testFactory(map[string]string{"XDG_CONFIG_HOME": dir})
	if code := Run(context.Background(), f, []string{"hosts", "provision", "build-1"}); code != ExitOK || !strings.Contains(out.String(), "put AGENTMSG_build-1 right (it had republish") {
		t.Fatalf("provision: exit %d: %s%s", code, out, errOut)
	}
	// It prints the host's entry with today's permissions, from its key.
	if !strings.Contains(out.String(), `"agentmsg.hb.build-1"`) || strings.Contains(out.String(), "STREAM.CREATE.AGENTMSG_build-1") {
		t.Errorf("provision prints no entry, or an old one:\n%s", out)
	}
}

func mustNkey(t *testing.T, file string) nats.Option {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	return opt
}
