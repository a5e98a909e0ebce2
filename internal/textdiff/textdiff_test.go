package textdiff

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "x\ny\n", "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"removed all", "x\n", "", "--- old\n+++ new\n@@ -1,1 +0,0 @@\n-x\n"},
		{"one change in context", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- old\n+++ new\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
		{"no newline at end", "a", "b", "--- old\n+++ new\n@@ -1,1 +1,1 @@\n-a\n+b\n\\ (a last line without a newline end)\n"},
	} {
		if got := Unified("old", "new", tc.old, tc.new); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}
}

// Any two texts: applying the diff's - and + lines to old gives new.
func TestUnifiedRebuilds(t *testing.T) {
	old := "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n"
	new := "{\n  \"a\": 1,\n  \"c\": 3,\n  \"hooks\": {}\n}\n"
	d := Unified("o", "n", old, new)
	var rebuilt []string
	for _, l := range strings.Split(d, "\n")[2:] {
		if l == "" || strings.HasPrefix(l, "@@") || l[0] == '-' {
			continue
		}
		rebuilt = append(rebuilt, l[1:])
	}
	if got := strings.Join(rebuilt, "\n") + "\n"; got != new {
		t.Errorf("rebuilt:\n%s\nfrom diff:\n%s", got, d)
	}
}
