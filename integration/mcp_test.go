package integration

import (
	"strings"
	"testing"
)

// mcp install codex keeps every comment and blank line a person wrote in
// config.toml, byte for byte: only agentmsg's own tables are rewritten, in
// the place they stand (issue 17, item 12: a comment above the table after
// agentmsg's was deleted).
func TestMergeTOMLKeepsEveryComment(t *testing.T) {
	e := MCPServer{Command: "/opt/bin/agentmsg", Args: []string{"mcp"}}
	entry := MCPInstall{Server: e}.codexEntry()
	fresh, err := mergeTOMLServer(nil, entry)
	if err != nil {
		t.Fatal(err)
	}
	// body is agentmsg's table without its header line.
	body := strings.TrimPrefix(string(fresh), "[mcp_servers.agentmsg]\n")
	crlf := strings.ReplaceAll(body, "\n", "\r\n")
	const docs = "# the documentation server\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # keep me\n"
	for _, tc := range []struct{ name, old, want string }{
		{"a comment above the next table",
			"model = \"o3\"\n\n[mcp_servers.agentmsg]\ncommand = \"old\"\nargs = []\n\n" + docs,
			"model = \"o3\"\n\n[mcp_servers.agentmsg]\n" + body + "\n" + docs},
		{"no blank line before the next table's comment",
			"[mcp_servers.agentmsg]\ncommand = \"old\"\n" + docs,
			"[mcp_servers.agentmsg]\n" + body + docs},
		{"agentmsg's sub-table goes, the comments around it stay",
			"[mcp_servers.agentmsg]\ncommand = \"old\"\n\n# its environment\n[mcp_servers.agentmsg.env]\nX = \"1\"\n\n\n" + docs,
			"[mcp_servers.agentmsg]\n" + body + "\n# its environment\n\n\n" + docs},
		{"a person's comments inside agentmsg's table stay in it",
			"[mcp_servers.agentmsg]\n# set up by Ana for the alpha team\ncommand = \"old\"\n   # indented, CRLF-free\nargs = []\n",
			"[mcp_servers.agentmsg]\n# set up by Ana for the alpha team\n   # indented, CRLF-free\n" + body},
		{"the header's own spelling and comment",
			"[ mcp_servers.\"agentmsg\" ]   # mine\ncommand = \"old\"\n",
			"[ mcp_servers.\"agentmsg\" ]   # mine\n" + body},
		{"comments at the end of the file",
			"[mcp_servers.agentmsg]\ncommand = \"old\"\n\n# the end\n\n",
			"[mcp_servers.agentmsg]\n" + body + "\n# the end\n\n"},
		{"appended after a last newline", "# mine\nmodel = \"o3\"\n",
			"# mine\nmodel = \"o3\"\n\n" + string(fresh)},
		{"appended after no last newline", "model = \"o3\" # mine",
			"model = \"o3\" # mine\n\n" + string(fresh)},
		{"appended after the file's own blank lines", "model = \"o3\"\n\n\n",
			"model = \"o3\"\n\n\n" + string(fresh)},
		{"an empty file", "", string(fresh)},
		{"CRLF line ends",
			"# mine\r\n[mcp_servers.agentmsg]\r\ncommand = \"old\"\r\n\r\n# docs\r\n[mcp_servers.docs]\r\ncommand = \"d\"\r\n",
			"# mine\r\n[mcp_servers.agentmsg]\r\n" + crlf + "\r\n# docs\r\n[mcp_servers.docs]\r\ncommand = \"d\"\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeTOMLServer([]byte(tc.old), entry)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			again, err := mergeTOMLServer(got, entry)
			if err != nil || string(again) != string(got) {
				t.Errorf("a second install changed the file (%v):\n%s", err, again)
			}
		})
	}
}

// Whatever config.toml mcp install codex accepts, every comment and blank
// line in it is still there afterwards, in the same order, and a second
// install changes nothing.
func FuzzMergeTOMLKeepsComments(f *testing.F) {
	for _, s := range []string{
		"",
		"# a\nmodel = \"o3\"\n",
		"[mcp_servers.agentmsg]\ncommand = \"x\"\n\n# b\n[mcp_servers.b]\ncommand = \"y\"\n",
		"[mcp_servers.agentmsg.env]\n# c\nX = \"1\"\n# d\n[mcp_servers.agentmsg]\nargs = []\n",
		"a = 1\r\n# e\r\n\r\n[t]\r\nb = 2 # f\r\n",
	} {
		f.Add(s)
	}
	body := MCPInstall{Server: MCPServer{Command: "/bin/agentmsg", Args: []string{"mcp"}}}.codexEntry()
	f.Fuzz(func(t *testing.T, old string) {
		got, err := mergeTOMLServer([]byte(old), body)
		if err != nil {
			return // refused: nothing is written
		}
		var want []string
		for _, l := range splitLines(old) {
			if blankOrComment(l) && strings.TrimSpace(l) != approveComment {
				want = append(want, strings.TrimRight(l, "\r\n"))
			}
		}
		k := 0
		for _, l := range splitLines(string(got)) {
			if k < len(want) && strings.TrimRight(l, "\r\n") == want[k] {
				k++
			}
		}
		if k < len(want) {
			t.Fatalf("%q lost %q:\n%s", old, want[k], got)
		}
		if again, err := mergeTOMLServer(got, body); err != nil || string(again) != string(got) {
			t.Fatalf("%q: a second install changed %q to %q (%v)", old, got, again, err)
		}
	})
}
