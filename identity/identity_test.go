package identity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIssueLookupRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp-tokens.json")
	tokens := &Tokens{Path: path}
	ana, err := tokens.Issue(Grant{Team: "alpha", Name: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	lead, err := (&Tokens{Path: path}).Issue(Grant{Team: "alpha", Name: "lead", Orchestrator: true})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := tokens.Lookup(ana); !ok || g.Name != "ana" || g.Orchestrator {
		t.Fatalf("ana's token: %+v %v", g, ok)
	}
	if g, ok := tokens.Lookup(lead); !ok || g.Name != "lead" || !g.Orchestrator {
		t.Fatalf("lead's token (issued by another Tokens): %+v %v", g, ok)
	}
	for _, bad := range []string{"", "amt_00", ana + "x", strings.ToUpper(ana)} {
		if _, ok := tokens.Lookup(bad); ok {
			t.Errorf("token %q was taken", bad)
		}
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), ana) || strings.Contains(string(data), lead) {
		t.Error("the file holds a token, not its hash")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o", fi.Mode().Perm())
	}
	if n, err := tokens.Revoke("alpha", "ana"); err != nil || n != 1 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if _, ok := tokens.Lookup(ana); ok {
		t.Error("a revoked token still works")
	}
}

// Forget takes back one token, whoever it speaks for, and leaves the
// agent's other tokens alone (mcp install --http revokes the token of the
// entry it replaces, not every token of the agent).
func TestForgetOneToken(t *testing.T) {
	tokens := &Tokens{Path: filepath.Join(t.TempDir(), "mcp-tokens.json")}
	old, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana"})
	other, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana"})
	g, ok, err := tokens.Forget(old)
	if err != nil || !ok || g.Name != "ana" || g.Team != "alpha" {
		t.Fatalf("forget: %+v %v %v", g, ok, err)
	}
	if _, ok := tokens.Lookup(old); ok {
		t.Error("a forgotten token still works")
	}
	if _, ok := tokens.Lookup(other); !ok {
		t.Error("forgetting one token revoked the agent's other one")
	}
	for _, unknown := range []string{old, "", "amt_madeup"} {
		if _, ok, err := tokens.Forget(unknown); ok || err != nil {
			t.Errorf("forget %q: %v %v", unknown, ok, err)
		}
	}
}

// A spawn's token replaces the earlier spawns' tokens of its session, and
// only theirs.
func TestRevokeSession(t *testing.T) {
	tokens := &Tokens{Path: filepath.Join(t.TempDir(), "mcp-tokens.json")}
	first, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana", Session: "agent-alpha-ana"})
	second, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana", Session: "agent-alpha-ana"})
	installed, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana"})
	instance, _ := tokens.Issue(Grant{Team: "alpha", Name: "ana-2", Session: "agent-alpha-ana-2"})
	if n, err := tokens.RevokeSession("agent-alpha-ana", second); n != 1 || err != nil {
		t.Fatalf("revoked %d, %v; want 1", n, err)
	}
	for tok, want := range map[string]bool{first: false, second: true, installed: true, instance: true} {
		if _, ok := tokens.Lookup(tok); ok != want {
			t.Errorf("token of %v: works %v, want %v", tok[:8], ok, want)
		}
	}
}

// A token revoked while another of the same size was issued stops working
// at once, even when the file's time did not move (the rewrite is a new
// file: its identity changed).
func TestRevokedTokenStopsAtOnce(t *testing.T) {
	tokens := &Tokens{Path: filepath.Join(t.TempDir(), "mcp-tokens.json")}
	issued := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	ana, err := tokens.Issue(Grant{Team: "alpha", Name: "ana", Issued: issued})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup(ana); !ok {
		t.Fatal("a new token is not known")
	}
	fi, _ := os.Stat(tokens.Path)
	if _, err := tokens.Revoke("alpha", "ana"); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Issue(Grant{Team: "alpha", Name: "bob", Issued: issued}); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(tokens.Path, fi.ModTime(), fi.ModTime()) // the same time, and the same size
	if _, ok := tokens.Lookup(ana); ok {
		t.Error("a revoked token still works")
	}
}

// Revoking where no token was ever issued makes no file.
func TestRevokingMakesNoFile(t *testing.T) {
	tokens := &Tokens{Path: filepath.Join(t.TempDir(), "mcp-tokens.json")}
	if n, err := tokens.RevokeSession("agent-alpha-ana", ""); n != 0 || err != nil {
		t.Fatalf("RevokeSession = %d, %v", n, err)
	}
	if _, err := os.Stat(tokens.Path); err == nil {
		t.Error("revoking made the token file")
	}
}
