package wire

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateDocs = flag.Bool("update", false, "write the generated sections of docs/api.md anew")

// docs/api.md says what the code says: its operations, the message state
// machine (a Mermaid diagram of mailbox.Transitions), the verdicts, the
// reasons, the event types and the error codes are drawn from the code.
// go test ./wire -run TestDocsAreCurrent -update writes them anew.
func TestDocsAreCurrent(t *testing.T) {
	path := filepath.Join("..", "docs", "api.md")
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, missing := FillDoc(string(page))
	for _, name := range missing {
		t.Errorf("%s has no generated section %q", path, name)
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != string(page) {
		t.Errorf("%s is not what the code says: go test ./wire -run TestDocsAreCurrent -update", path)
	}
}
