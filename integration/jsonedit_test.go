package integration

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONSet(t *testing.T) {
	entry := map[string]any{"command": "x"}
	for _, tc := range []struct {
		name, old string
		path      []string // the object to set "new" in
		want      string
	}{
		{"empty file", "", nil, "{\n  \"new\": {\n    \"command\": \"x\"\n  }\n}\n"},
		{"empty object, one line", "{}", nil, "{\n  \"new\": {\n    \"command\": \"x\"\n  }\n}"},
		{"one line, spaced", `{"a": 1, "b": [1, 2]}`, nil, `{"a": 1, "b": [1, 2], "new": {"command": "x"}}`},
		{"one line, compact", `{"a":1}`, nil, `{"a":1,"new":{"command":"x"}}`},
		{"tabs", "{\n\t\"b\": 1,\n\t\"a\": 2\n}\n", nil, "{\n\t\"b\": 1,\n\t\"a\": 2,\n\t\"new\": {\n\t\t\"command\": \"x\"\n\t}\n}\n"},
		{"CRLF", "{\r\n  \"a\": {}\r\n}\r\n", []string{"a"}, "{\r\n  \"a\": {\r\n    \"new\": {\r\n      \"command\": \"x\"\r\n    }\r\n  }\r\n}\r\n"},
		{"nested, inline object in a multi-line file", "{\n    \"s\": {\"g\": 1}\n}", []string{"s"}, "{\n    \"s\": {\"g\": 1, \"new\": {\"command\": \"x\"}}\n}"},
		{"replace where it stands", "{\n   \"new\": [1,\n     2],\n   \"z\": null\n}", nil, "{\n   \"new\": {\n      \"command\": \"x\"\n   },\n   \"z\": null\n}"},
		{"the last of duplicate keys", `{"new": 1, "new": 2}`, nil, `{"new": 1, "new": {"command": "x"}}`},
		{"escaped key, trailing text kept", "{\"ne\\u0077\": 0}  \n\n", nil, "{\"ne\\u0077\": {\"command\": \"x\"}}  \n\n"},
		{"HTML characters stay readable", `{"a": "<&>"}`, nil, `{"a": "<&>", "new": {"command": "x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseJSONDoc([]byte(tc.old))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.set(d.lookup(tc.path...), "new", entry); err != nil {
				t.Fatal(err)
			}
			if got := string(d.out()); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// Comments (which Gemini CLI and Qwen Code allow in settings.json) and
// blank lines stay byte for byte; what is added goes after the comments on
// the last item's line, so that each stays beside what it is about (issue
// 17, item 12).
func TestJSONKeepsCommentsAndBlankLines(t *testing.T) {
	entry := map[string]any{"command": "x"}
	for _, tc := range []struct {
		name, old string
		path      []string // the object to set "new" in
		want      string
	}{
		{"blank lines", "{\n\n  \"a\": 1,\n\n\n  \"b\": 2\n\n}\n\n", nil,
			"{\n\n  \"a\": 1,\n\n\n  \"b\": 2,\n  \"new\": {\n    \"command\": \"x\"\n  }\n\n}\n\n"},
		{"a line comment after the last member", "{\n  \"a\": 1 // one\n}\n", nil,
			"{\n  \"a\": 1, // one\n  \"new\": {\n    \"command\": \"x\"\n  }\n}\n"},
		{"comments and blank lines between members", "{\n  /* mine */\n  \"a\": 1,\n\n  // spacer\n  \"b\": 2 /* two */ // 2\n  // the end\n}", nil,
			"{\n  /* mine */\n  \"a\": 1,\n\n  // spacer\n  \"b\": 2, /* two */ // 2\n  \"new\": {\n    \"command\": \"x\"\n  }\n  // the end\n}"},
		{"an empty object holding a comment", "{\n  \"s\": { // none yet\n  }\n}", []string{"s"},
			"{\n  \"s\": { // none yet\n    \"new\": {\n      \"command\": \"x\"\n    }\n  }\n}"},
		{"a block comment over lines after the last member", "{\n  \"a\": 1 /* one,\n  or so */\n}", nil,
			"{\n  \"a\": 1, /* one,\n  or so */\n  \"new\": {\n    \"command\": \"x\"\n  }\n}"},
		{"one line, a block comment", `{"a": 1 /* c */}`, nil, `{"a": 1, /* c */ "new": {"command": "x"}}`},
		{"comment marks inside strings", `{"u": "http://x/*y*/"}`, nil, `{"u": "http://x/*y*/", "new": {"command": "x"}}`},
		{"a comment after the object", "{\"a\": 1}\n// end\n", nil, "{\"a\": 1, \"new\": {\"command\": \"x\"}}\n// end\n"},
		{"CRLF with a line comment", "{\r\n  \"a\": 1 // one\r\n}\r\n", nil,
			"{\r\n  \"a\": 1, // one\r\n  \"new\": {\r\n    \"command\": \"x\"\r\n  }\r\n}\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := parseJSONDoc([]byte(tc.old))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.set(d.lookup(tc.path...), "new", entry); err != nil {
				t.Fatal(err)
			}
			if got := string(d.out()); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	d, err := parseJSONDoc([]byte("{\n  \"l\": [\n    1 // one\n  ]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.add(d.lookup("l"), 7); err != nil || string(d.out()) != "{\n  \"l\": [\n    1, // one\n    7\n  ]\n}" {
		t.Errorf("add after a commented element: %v\n%s", err, d.out())
	}
}

func TestJSONAdd(t *testing.T) {
	for _, tc := range []struct{ old, want string }{
		{"{\"l\": []}", "{\"l\": [7]}"},
		{"{\n  \"l\": []\n}", "{\n  \"l\": [\n    7\n  ]\n}"},
		{"{\n  \"l\": [\n      1\n  ]\n}", "{\n  \"l\": [\n      1,\n      7\n  ]\n}"},
		{"{\"l\": [1,2]}", "{\"l\": [1,2,7]}"},
	} {
		d, err := parseJSONDoc([]byte(tc.old))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.add(d.lookup("l"), 7); err != nil {
			t.Fatal(err)
		}
		if got := string(d.out()); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.old, got, tc.want)
		}
	}
}

func TestJSONRefuses(t *testing.T) {
	for _, old := range []string{"{not json", "[1]", `"s"`, "{} {}", "{} /* open", `{"a": 1 / 2}`} {
		if _, err := parseJSONDoc([]byte(old)); err == nil {
			t.Errorf("%q: no error", old)
		}
	}
	d, _ := parseJSONDoc([]byte(`{"a": 1}`))
	if err := d.set(d.lookup("a"), "k", 1); err == nil {
		t.Error("set into a number")
	}
	if err := d.add(d.lookup("a"), 1); err == nil {
		t.Error("add to a number")
	}
}

// Any JSON object comes back as the same object with the one member set,
// and every byte before the insertion point kept.
func FuzzJSONSet(f *testing.F) {
	for _, s := range []string{"{}", `{"a": 1}`, "{\n\t\"b\": [1, {\"c\": \"\\\"}\"}]\n}", `{"k": {"x": []}, "k": 2}`, " { } "} {
		f.Add(s, "k")
	}
	f.Fuzz(func(t *testing.T, old, key string) {
		var before map[string]any
		if json.Unmarshal([]byte(old), &before) != nil || before == nil || !utf8.ValidString(key) {
			return // agentmsg's keys are plain ASCII
		}
		d, err := parseJSONDoc([]byte(old))
		if err != nil {
			t.Fatalf("%q: %v", old, err)
		}
		if err := d.set(d.root, key, []any{"v", 1.0}); err != nil {
			t.Fatalf("%q: %v", old, err)
		}
		var after map[string]any
		if err := json.Unmarshal(d.out(), &after); err != nil {
			t.Fatalf("%q gave invalid JSON %q: %v", old, d.out(), err)
		}
		before[key] = []any{"v", 1.0}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q: got %v, want %v", old, after, before)
		}
	})
}

// Any JSON object, with comments or not, keeps every byte but white space
// when a member is added (comments included, in order), and reads as the
// same object with that member.
func FuzzJSONKeepsComments(f *testing.F) {
	for _, s := range []string{"{}", "{\n  // c\n  \"a\": 1 /* d */\n}", "{\"s\": { // e\n}}", "{\"u\": \"//x\"} // f", "{\n\t\"l\": [1 /* g */, 2] // h\r\n}"} {
		f.Add(s)
	}
	const key = "agentmsg-fuzz"
	f.Fuzz(func(t *testing.T, old string) {
		plain, err := blankComments([]byte(old))
		var before map[string]any
		if err != nil || json.Unmarshal(plain, &before) != nil || before == nil {
			return
		}
		if _, ok := before[key]; ok {
			return
		}
		d, err := parseJSONDoc([]byte(old))
		if err != nil {
			t.Fatalf("%q: %v", old, err)
		}
		if err := d.set(d.root, key, []any{"v", 1.0}); err != nil {
			t.Fatalf("%q: %v", old, err)
		}
		var after map[string]any
		if err := json.Unmarshal(d.plain, &after); err != nil {
			t.Fatalf("%q gave %q: %v", old, d.out(), err)
		}
		before[key] = []any{"v", 1.0}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("%q: got %v, want %v", old, after, before)
		}
		got, k := d.out(), 0
		for i := 0; i < len(old); i++ {
			if strings.IndexByte(" \t\r\n", old[i]) >= 0 {
				continue
			}
			for k < len(got) && got[k] != old[i] {
				k++
			}
			if k == len(got) {
				t.Fatalf("%q: byte %d (%q) is gone:\n%s", old, i, old[i], got)
			}
			k++
		}
	})
}
