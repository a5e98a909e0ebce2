package mailbox

import (
	"path/filepath"
	"slices"
	"testing"
)

// The fsync choice: Linux one syncfs for the store whatever was written;
// elsewhere each file, then each directory, the last one flushing the
// drive's cache, and nothing when nothing was written.
func TestPlanSync(t *testing.T) {
	t.Parallel()
	files := []string{"/r/b.jsonl", "/r/a.jsonl", "/r/a.jsonl"}
	dirs := []string{"/r"}
	if got := planSync("/r", files, dirs, true); !slices.Equal(got, []syncStep{{"/r", syncFS}}) {
		t.Errorf("with syncfs: %v", got)
	}
	if got := planSync("/r", nil, nil, true); !slices.Equal(got, []syncStep{{"/r", syncFS}}) {
		t.Errorf("with syncfs, nothing noted: %v", got)
	}
	want := []syncStep{{"/r/a.jsonl", syncData}, {"/r/b.jsonl", syncData}, {"/r", syncFull}}
	if got := planSync("/r", files, dirs, false); !slices.Equal(got, want) {
		t.Errorf("without syncfs: %v, want %v", got, want)
	}
	if got := planSync("/r", []string{"/r/a.jsonl"}, nil, false); !slices.Equal(got, []syncStep{{"/r/a.jsonl", syncFull}}) {
		t.Errorf("one file: %v", got)
	}
	if got := planSync("/r", nil, nil, false); len(got) != 0 {
		t.Errorf("nothing written: %v", got)
	}
}

// AppendBatched tells Store.Sync what it wrote: each inbox, and the
// directory of one it made; a Sync takes it all, and a copy of the Store
// shares the record.
func TestAppendBatchedNotesWhatSyncMustKeep(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ana, bob := box(t, s, "ana"), box(t, s, "bob")
	appendN(t, ana, 1) // synced already: nothing for Sync
	if files, dirs := s.unsynced.take(); len(files)+len(dirs) != 0 {
		t.Fatalf("Append left %v %v for Sync", files, dirs)
	}
	copied := *s
	for _, b := range []*Box{ana, bob} {
		if err := b.AppendBatched(newEnv(t, "lead", b.Agent, "batched")); err != nil {
			t.Fatal(err)
		}
	}
	files, dirs := copied.unsynced.take()
	slices.Sort(files)
	if !slices.Equal(files, []string{ana.path(), bob.path()}) || !slices.Equal(dirs, []string{filepath.Dir(bob.path())}) {
		t.Errorf("noted %v %v, want both inboxes and the directory of bob's new one", files, dirs)
	}
	s.unsynced.putBack(files, dirs)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if files, dirs := s.unsynced.take(); len(files)+len(dirs) != 0 {
		t.Errorf("after Sync: %v %v still noted", files, dirs)
	}
	// A file removed since (compacted away, cleaned) is nothing to keep.
	s.unsynced.note(filepath.Join(s.Root, "gone.jsonl"), "")
	if err := s.Sync(); err != nil {
		t.Errorf("Sync of a removed file: %v", err)
	}
}
