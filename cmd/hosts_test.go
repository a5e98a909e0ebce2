package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
