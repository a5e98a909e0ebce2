package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// jsonDoc edits another program's JSON settings file the way a person
// would: every byte agentmsg does not change stays as it was (the order of
// keys, indentation, spacing, line ends, blank lines, comments), and what
// it adds follows the file's own indentation. Each edit splices the text
// and reads it again. Comments, // and /* */, are read as Gemini CLI and
// Qwen Code read their settings.json: as white space.
type jsonDoc struct {
	text  []byte
	plain []byte // text with its comments blanked out: JSON, at the same offsets
	root  *jsonNode
	unit  string // one level of indentation in this file
}

// jsonNode is one value in the text: bytes [start, end); an object's
// members or an array's elements.
type jsonNode struct {
	start, end int
	kind       byte // '{', '[', or 0 for a string, number, true, false, null
	members    []jsonMember
	elems      []*jsonNode
}

type jsonMember struct {
	key      string
	keyStart int
	val      *jsonNode
}

// errNotObject: the file holds JSON, but not an object at the top.
var errNotObject = errors.New("not a JSON object")

// parseJSONDoc reads a settings file; empty (or only white space) is an
// empty object.
func parseJSONDoc(data []byte) (*jsonDoc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	plain, err := blankComments(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if !json.Valid(plain) {
		var v any
		err := json.Unmarshal(plain, &v)
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	d := &jsonDoc{text: append([]byte(nil), data...)}
	if err := d.reparse(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *jsonDoc) reparse() error {
	plain, err := blankComments(d.text)
	if err != nil {
		return err
	}
	d.plain = plain
	p := jsonParser{s: plain}
	p.ws()
	root, err := p.value()
	if err != nil {
		return err
	}
	if root.kind != '{' {
		return errNotObject
	}
	d.root = root
	d.unit = "  "
	if len(root.members) > 0 {
		if ind, ok := d.lineIndent(root.members[0].keyStart); ok && ind != "" {
			d.unit = ind
		}
	}
	return nil
}

// lineIndent is the white space before pos on its line, and whether only
// white space stands there (pos starts the line's text).
func (d *jsonDoc) lineIndent(pos int) (string, bool) {
	i := pos
	for i > 0 && (d.text[i-1] == ' ' || d.text[i-1] == '\t') {
		i--
	}
	if i > 0 && d.text[i-1] != '\n' && d.text[i-1] != '\r' {
		return "", false
	}
	return string(d.text[i:pos]), true
}

// baseIndent is the indentation of the line pos is on.
func (d *jsonDoc) baseIndent(pos int) string {
	i := bytes.LastIndexByte(d.text[:pos], '\n') + 1
	j := i
	for j < len(d.text) && (d.text[j] == ' ' || d.text[j] == '\t') {
		j++
	}
	return string(d.text[i:j])
}

// multiLine reports whether a container is written over several lines; an
// empty one takes the style of the whole file.
func (d *jsonDoc) multiLine(n *jsonNode) bool {
	if bytes.IndexByte(d.text[n.start:n.end], '\n') >= 0 {
		return true
	}
	empty := len(n.members) == 0 && len(n.elems) == 0
	return empty && (n == d.root || bytes.IndexByte(d.text[d.root.start:d.root.end], '\n') >= 0)
}

// spaced reports whether the container's text puts a space after its
// colons or commas (for values added on one line).
func (d *jsonDoc) spaced(n *jsonNode) bool {
	s := d.text[n.start:n.end]
	return bytes.Contains(s, []byte(": ")) || bytes.Contains(s, []byte(", ")) || len(s) <= 2
}

// get returns the member key of obj (the last one, as encoding/json
// would), or nil.
func (obj *jsonNode) get(key string) *jsonNode {
	var v *jsonNode
	for _, m := range obj.members {
		if m.key == key {
			v = m.val
		}
	}
	return v
}

// lookup follows a path of object keys from the root; nil if a step is
// missing or not an object.
func (d *jsonDoc) lookup(path ...string) *jsonNode {
	n := d.root
	for _, k := range path {
		if n == nil || n.kind != '{' {
			return nil
		}
		n = n.get(k)
	}
	return n
}

// render writes v as it would stand at indent in a container that is
// multi-line or not.
func (d *jsonDoc) render(v any, indent string, multi, spaced bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep > and & readable in command lines
	if multi {
		enc.SetIndent(indent, d.unit)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if !multi && spaced {
		out = spaceCompact(out)
	}
	if nl := d.newline(); multi && nl != "\n" {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte(nl))
	}
	return out, nil
}

// spaceCompact puts a space after each colon and comma outside strings.
func spaceCompact(s []byte) []byte {
	var b bytes.Buffer
	in, esc := false, false
	for _, c := range s {
		b.WriteByte(c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ':' || c == ','):
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

func (d *jsonDoc) splice(from, to int, with []byte) error {
	text := make([]byte, 0, len(d.text)+len(with))
	text = append(append(append(text, d.text[:from]...), with...), d.text[to:]...)
	old := d.text
	d.text = text
	if err := d.reparse(); err != nil {
		d.text = old
		_ = d.reparse()
		return fmt.Errorf("editing the JSON went wrong (nothing written): %w", err)
	}
	return nil
}

// set makes obj's member key hold v: its value is replaced where it
// stands, or the member is added after the last one.
func (d *jsonDoc) set(obj *jsonNode, key string, v any) error {
	if obj.kind != '{' {
		return errNotObject
	}
	for i := len(obj.members) - 1; i >= 0; i-- {
		if m := obj.members[i]; m.key == key {
			text, err := d.render(v, d.baseIndent(m.keyStart), d.multiLine(obj), d.spaced(obj))
			if err != nil {
				return err
			}
			return d.splice(m.val.start, m.val.end, text)
		}
	}
	k, err := json.Marshal(key)
	if err != nil {
		return err
	}
	return d.insert(obj, func(indent string, multi, spaced bool) ([]byte, error) {
		val, err := d.render(v, indent, multi, spaced)
		if err != nil {
			return nil, err
		}
		sep := ":"
		if multi || spaced {
			sep = ": "
		}
		return append(append(k, sep...), val...), nil
	})
}

// add appends v to the array arr.
func (d *jsonDoc) add(arr *jsonNode, v any) error {
	if arr.kind != '[' {
		return errors.New("not a JSON array")
	}
	return d.insert(arr, func(indent string, multi, spaced bool) ([]byte, error) {
		return d.render(v, indent, multi, spaced)
	})
}

// lastItem is where c's last member (from its key) or element starts and
// ends; ok is false when c is empty.
func (c *jsonNode) lastItem() (start, end int, ok bool) {
	switch {
	case len(c.members) > 0:
		m := c.members[len(c.members)-1]
		return m.keyStart, m.val.end, true
	case len(c.elems) > 0:
		e := c.elems[len(c.elems)-1]
		return e.start, e.end, true
	}
	return 0, 0, false
}

// insert adds one item (a member or an element, made by item for the
// indentation and style it will have) after the last one of container c.
func (d *jsonDoc) insert(c *jsonNode, item func(indent string, multi, spaced bool) ([]byte, error)) error {
	multi, spaced := d.multiLine(c), d.spaced(c)
	base := d.baseIndent(c.start)
	start, end, ok := c.lastItem()
	if !ok {
		// The comments an empty container holds stay before the item.
		kept := bytes.TrimRight(d.text[c.start+1:c.end-1], " \t\r\n")
		if !multi {
			text, err := item(base, multi, spaced)
			if err != nil {
				return err
			}
			return d.splice(c.start+1, c.end-1, append(kept[:len(kept):len(kept)], text...))
		}
		text, err := item(base+d.unit, multi, spaced)
		if err != nil {
			return err
		}
		nl := d.newline()
		with := append(append(append(kept[:len(kept):len(kept)], nl+base+d.unit...), text...), nl+base...)
		return d.splice(c.start+1, c.end-1, with)
	}
	gap := ""
	indent := base + d.unit
	switch {
	case multi:
		// Where the items stand on lines of their own, line up with the
		// last of them; else one level in from the container's line.
		if ind, ok := d.lineIndent(start); ok {
			indent = ind
		}
		gap = d.newline() + indent
	case spaced:
		gap = " "
	}
	text, err := item(indent, multi, spaced)
	if err != nil {
		return err
	}
	// The comma goes right after the last item, the new one after the
	// comments that follow it on its line.
	after := d.commentsAfter(end)
	with := append(append(append([]byte(","), d.text[end:after]...), gap...), text...)
	return d.splice(end, after, with)
}

// commentsAfter is where the comments that follow pos on its line end
// (a block comment may go on over lines), or pos when none do.
func (d *jsonDoc) commentsAfter(pos int) int {
	end := pos
	for i := pos; i < len(d.text); {
		switch {
		case d.text[i] == ' ' || d.text[i] == '\t':
			i++
		case bytes.HasPrefix(d.text[i:], []byte("//")):
			n := bytes.IndexByte(d.text[i:], '\n')
			if n < 0 {
				return len(d.text)
			}
			return i + len(bytes.TrimRight(d.text[i:i+n], "\r"))
		case bytes.HasPrefix(d.text[i:], []byte("/*")):
			i += 2 + bytes.Index(d.text[i+2:], []byte("*/")) + 2 // blankComments found its end
			end = i
		default:
			return end
		}
	}
	return end
}

// newline is the file's line end.
func (d *jsonDoc) newline() string {
	if bytes.Contains(d.text, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// out is the document's text.
func (d *jsonDoc) out() []byte { return d.text }

// blankComments is s with each // and /* */ comment outside strings turned
// into spaces (line ends kept): JSON where s is JSON with comments, every
// value at the same offset.
func blankComments(s []byte) ([]byte, error) {
	out := append([]byte(nil), s...)
	inString, escaped := false, false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString || c != '/' || i+1 == len(out):
		case out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n' && out[i] != '\r'; i++ {
				out[i] = ' '
			}
		case out[i+1] == '*':
			n := bytes.Index(out[i+2:], []byte("*/"))
			if n < 0 {
				return nil, errors.New("a /* comment that does not end")
			}
			for end := i + 2 + n + 2; i < end; i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	return out, nil
}

// jsonParser reads JSON that json.Valid has accepted, recording where each
// value lies.
type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jsonParser) value() (*jsonNode, error) {
	if p.i >= len(p.s) {
		return nil, errors.New("unexpected end of JSON")
	}
	n := &jsonNode{start: p.i}
	switch c := p.s[p.i]; c {
	case '{':
		n.kind = '{'
		p.i++
		p.ws()
		for p.i < len(p.s) && p.s[p.i] != '}' {
			keyStart := p.i
			if err := p.str(); err != nil {
				return nil, err
			}
			var key string
			if err := json.Unmarshal(p.s[keyStart:p.i], &key); err != nil {
				return nil, err
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, errors.New("want ':' after a key")
			}
			p.i++
			p.ws()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, jsonMember{key: key, keyStart: keyStart, val: v})
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				p.ws()
			}
		}
		p.i++
	case '[':
		n.kind = '['
		p.i++
		p.ws()
		for p.i < len(p.s) && p.s[p.i] != ']' {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				p.ws()
			}
		}
		p.i++
	case '"':
		if err := p.str(); err != nil {
			return nil, err
		}
	default:
		for p.i < len(p.s) && strings.IndexByte(" \t\r\n,]}", p.s[p.i]) < 0 {
			p.i++
		}
	}
	if p.i > len(p.s) {
		return nil, errors.New("unexpected end of JSON")
	}
	n.end = p.i
	return n, nil
}

// str moves past a string starting at p.i.
func (p *jsonParser) str() error {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return errors.New("want a string")
	}
	for p.i++; p.i < len(p.s); p.i++ {
		switch p.s[p.i] {
		case '\\':
			p.i++
		case '"':
			p.i++
			return nil
		}
	}
	return errors.New("unterminated string")
}
