package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The README is the first screen a newcomer reads; the depth is in docs/.
// readmeMaxLines keeps it that way: past it, a section belongs in a page.
const readmeMaxLines = 300

// markdownLink is an inline link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docPages are the Markdown files whose links must hold.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md", "ARCHITECTURE.md"}, pages...)
}

// outsideCode returns the lines of a Markdown file that are not in a
// fenced code block: a link or heading shown as an example is not one.
func outsideCode(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, line)
		}
	}
	return lines
}

// anchors are the ids GitHub gives a file's headings: lower case, every
// character but letters, digits, spaces, '-' and '_' dropped, spaces as
// '-', and a repeated id suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, line := range outsideCode(text) {
		heading := strings.TrimLeft(line, "#")
		if heading == line || !strings.HasPrefix(heading, " ") {
			continue
		}
		id := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(heading))
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// Every relative link in the README and the docs leads to a file that
// exists, and to a heading of it when it names one.
func TestDocLinksResolve(t *testing.T) {
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range outsideCode(string(b)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				if err := checkLink(page, string(b), m[1]); err != nil {
					t.Errorf("%s: link %s: %v", page, m[1], err)
				}
			}
		}
	}
}

// checkLink says what is wrong with a link found in page, whose text is
// text: nothing for a link out of the repository.
func checkLink(page, text, link string) error {
	if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(link, "#")
	if path != "" {
		page = filepath.Join(filepath.Dir(page), path)
		info, err := os.Stat(page)
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(page)
		if err != nil {
			return err
		}
		text = string(b)
	}
	if anchor != "" && !anchors(text)[anchor] {
		return fmt.Errorf("no heading with the anchor #%s in %s", anchor, page)
	}
	return nil
}

// The README stays a first screen and a table of contents: short, and
// linking every page of docs/ and ARCHITECTURE.md.
func TestReadmeIsShortAndLinksEveryPage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it under %d and move the depth to docs/", n, readmeMaxLines)
	}
	var linked []string
	for _, m := range markdownLink.FindAllStringSubmatch(readme, -1) {
		path, _, _ := strings.Cut(m[1], "#")
		linked = append(linked, path)
	}
	for _, page := range docPages(t)[1:] {
		if !slices.Contains(linked, filepath.ToSlash(page)) {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

// Every test docs/security.md cites as proof exists: a threat model whose
// proofs were renamed or removed would say more than the code shows.
func TestSecurityProofsExist(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(b), -1)
	if len(cited) < 10 {
		t.Fatalf("docs/security.md cites %d tests; it should name the test behind each door", len(cited))
	}
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cited {
		if !defined[m[1]] {
			t.Errorf("docs/security.md cites %s, which no test file defines", m[1])
		}
	}
}
