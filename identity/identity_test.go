package identity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
