package mailbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Two tmux servers that both run an agent-core-ana keep apart what is
// kept for each (issue 17, item 3): one's inbox, listing and board never
// show the other's.
func TestPlacesKeepServersApart(t *testing.T) {
	root := t.TempDir()
	a, b := New(root), New(root)
	a.Place = Place{Host: "h", Socket: "/tmp/tmux-0/default"}
	b.Place = Place{Host: "h", Socket: "/tmp/other/s"}
	env := newEnv(t, "lead", "ana", "for the first server's ana")
	if err := box(t, a, "ana").Append(env); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Read(team, "ana"); err != nil || len(got.Envelopes) != 0 {
		t.Fatalf("the other server's inbox holds %+v, %v", got.Envelopes, err)
	}
	if inboxes, _ := b.Inboxes(""); len(inboxes) != 0 {
		t.Fatalf("the other server lists %+v", inboxes)
	}
	if got, _ := a.Read(team, "ana"); len(got.Envelopes) != 1 {
		t.Fatalf("its own server's inbox holds %d messages", len(got.Envelopes))
	}
	var p Place
	data, err := os.ReadFile(filepath.Join(root, "places", a.Place.Key(), placeFile))
	if err != nil || json.Unmarshal(data, &p) != nil || p != a.Place {
		t.Fatalf("place.json = %s, %v; want %+v", data, err, a.Place)
	}
	if a.Place.Key() == b.Place.Key() || (Place{Host: "g", Socket: a.Place.Socket}).Key() == a.Place.Key() {
		t.Error("two places share a key")
	}
}

// The layout before places moves, without loss, to the place its registry
// names, else to the place of the store that finds it; a file the place
// already has is left where it was, never overwritten.
func TestMigrateLegacy(t *testing.T) {
	root := t.TempDir()
	legacy := New(root) // no place: <root>/teams, as before
	kept := newEnv(t, "lead", "ana", "kept before the upgrade")
	if err := box(t, legacy, "ana").Append(kept); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := legacy.Register("beta", AgentRecord{Agent: "bo", Session: "agent-beta-bo", Socket: filepath.Join(elsewhere, "s")}); err != nil {
		t.Fatal(err)
	}
	bBox, err := legacy.Box("beta", "bo")
	if err != nil {
		t.Fatal(err)
	}
	if err := bBox.Append(newEnv(t, "lead", "bo", "for bo")); err != nil {
		t.Fatal(err)
	}

	s := New(root)
	s.Place = Place{Host: "h", Socket: "/tmp/tmux-0/default"}
	// The place already has a cursor of ana's: it is not overwritten.
	if err := os.MkdirAll(filepath.Join(s.teamDir(team), "mailbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(s.teamDir(team), "mailbox", "ana.cursor.lead")
	if err := os.WriteFile(mine, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(legacy.teamDir(team), "mailbox", "ana.cursor.lead"), []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // again: nothing changes
		if err := s.MigrateLegacy(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Read(team, "ana")
	if err != nil || len(got.Envelopes) != 1 || got.Envelopes[0].ID != kept.ID {
		t.Fatalf("after the move ana's inbox holds %+v, %v", got.Envelopes, err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Errorf("the place's own file became %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(legacy.teamDir(team), "mailbox", "ana.cursor.lead")); string(b) != "theirs" {
		t.Errorf("the file that could not move is gone: %q", b)
	}
	// Team beta's registry names another server: it moved there.
	there := New(root)
	there.Place = Place{Host: "h", Socket: canonicalPath(filepath.Join(elsewhere, "s"))}
	if got, _ := there.Read("beta", "bo"); len(got.Envelopes) != 1 {
		t.Errorf("bo's inbox is not with the server its registry names: %+v", got.Envelopes)
	}
	if got, _ := s.Read("beta", "bo"); len(got.Envelopes) != 0 {
		t.Errorf("bo's inbox moved to the wrong server: %+v", got.Envelopes)
	}
}
