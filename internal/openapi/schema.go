// Package openapi builds an OpenAPI 3.1 document from Go types: each
// operation's request and response are structs with JSON tags, and their
// schemas come from those tags by the same means the MCP SDK derives its
// tools' schemas (github.com/google/jsonschema-go): a field without
// omitempty (or omitzero) is required, a `jsonschema:"..."` tag is its
// description. What the tags cannot say is given once, by type: the values
// of an enumeration (a named string type, or a field tagged `enum:"Name"`)
// and the few types JSON writes in their own way (time.Time, []byte, a
// duration).
//
// Named structs and enumerations become components
// (#/components/schemas/Name), so that a generated client has one type
// per Go type. Nothing here knows agentmsg: package wire declares the
// operations.
package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Enum is the values of an enumeration, with what each means.
type Enum struct {
	Values []string
	// Doc, when set, says what a value means, in Values' order: it goes
	// into the component's description.
	Doc []string
}

// Schemas registers Go types as schema components and hands out
// references to them.
type Schemas struct {
	// Enums are named string types whose values are listed.
	Enums map[reflect.Type]Enum
	// Named are enumerations a field names with a tag `enum:"Name"`: a
	// field of plain string whose values are one of these.
	Named map[string]Enum
	// Fixed are types with a schema of their own (time.Time, []byte, ...):
	// used as they are, never a component.
	Fixed map[reflect.Type]*jsonschema.Schema
	// Prefix is what a reference starts with; "#/components/schemas/"
	// when empty.
	Prefix string
	// Names are component names for types whose Go name says too little
	// out of its package (delivery.State: ScreenState).
	Names map[reflect.Type]string

	names  map[reflect.Type]string
	byName map[string]reflect.Type
	comps  map[string]*jsonschema.Schema
	strict map[string]bool // request bodies: no field beyond those described
	docs   map[string]string
}

func (s *Schemas) prefix() string {
	if s.Prefix == "" {
		return "#/components/schemas/"
	}
	return s.Prefix
}

func (s *Schemas) init() {
	if s.names == nil {
		s.names, s.byName, s.comps, s.strict, s.docs = map[reflect.Type]string{}, map[string]reflect.Type{}, map[string]*jsonschema.Schema{}, map[string]bool{}, map[string]string{}
	}
}

// Ref is a schema for a value of type t: a reference to t's component
// when t is a named struct or enumeration, else t's schema inline. A
// request body is strict: it and the structs in it admit no field they do
// not describe (the daemon refuses an unknown field).
func (s *Schemas) Ref(t reflect.Type, strict bool) (*jsonschema.Schema, error) {
	s.init()
	return s.schemaOf(t, strict)
}

// Describe sets the description of the component of type t.
func (s *Schemas) Describe(t reflect.Type, doc string) {
	s.init()
	s.docs[s.nameOf(t)] = doc
}

// Add registers a component made by hand (a union of event types, say),
// and returns a reference to it.
func (s *Schemas) Add(name string, sch *jsonschema.Schema) *jsonschema.Schema {
	s.init()
	s.comps[name] = sch
	return &jsonschema.Schema{Ref: s.prefix() + name}
}

// Components are every component registered, by name.
func (s *Schemas) Components() map[string]*jsonschema.Schema {
	s.init()
	for name, doc := range s.docs {
		if c := s.comps[name]; c != nil && c.Description == "" {
			c.Description = doc
		}
	}
	return s.comps
}

// nameOf is the component name of t: its Go name, with its package's in
// front when another package has a type of that name.
func (s *Schemas) nameOf(t reflect.Type) string {
	if n, ok := s.names[t]; ok {
		return n
	}
	name := t.Name()
	if n, ok := s.Names[t]; ok {
		name = n
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if other, taken := s.byName[name]; taken && other != t {
		pkg := t.PkgPath()
		pkg = pkg[strings.LastIndexByte(pkg, '/')+1:]
		name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
	}
	s.names[t], s.byName[name] = name, t
	return name
}

// component reports whether values of t are a component of their own.
func (s *Schemas) component(t reflect.Type) bool {
	if t.Name() == "" || s.Fixed[t] != nil {
		return false
	}
	if _, ok := s.Enums[t]; ok {
		return true
	}
	return t.Kind() == reflect.Struct
}

func (s *Schemas) schemaOf(t reflect.Type, strict bool) (*jsonschema.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if f := s.Fixed[t]; f != nil {
		return f.CloneSchemas(), nil
	}
	if !s.component(t) {
		return s.inline(t, strict)
	}
	name := s.nameOf(t)
	ref := &jsonschema.Schema{Ref: s.prefix() + name}
	if _, done := s.comps[name]; done {
		if strict && !s.strict[name] && t.Kind() == reflect.Struct {
			return nil, fmt.Errorf("%s is both a request body (or in one) and a response: give the request its own type", t)
		}
		return ref, nil
	}
	if e, ok := s.Enums[t]; ok {
		s.comps[name] = enumSchema(e)
		return ref, nil
	}
	s.comps[name] = &jsonschema.Schema{} // taken: a type that holds itself refers to it
	s.strict[name] = strict
	sch, err := s.object(t, strict)
	if err != nil {
		return nil, err
	}
	s.comps[name] = sch
	return ref, nil
}

// inline is the schema of an unnamed type (a slice, a map, a scalar).
func (s *Schemas) inline(t reflect.Type, strict bool) (*jsonschema.Schema, error) {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		items, err := s.schemaOf(t.Elem(), strict)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: a map's keys must be strings", t)
		}
		vals, err := s.schemaOf(t.Elem(), strict)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Type: "object", AdditionalProperties: vals}, nil
	case reflect.Struct:
		return s.object(t, strict)
	}
	sch, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, err
	}
	clean(sch)
	return sch, nil
}

// object is the schema of struct type t, by jsonschema-go's rules: each
// field JSON writes is a property, required unless omitempty or omitzero,
// described by its jsonschema tag; a field that is a named struct or
// enumeration is a reference to it (jsonschema-go would copy it in, and
// fails on a struct that both embeds a type and holds a list of it).
func (s *Schemas) object(t reflect.Type, strict bool) (*jsonschema.Schema, error) {
	sch := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, f := range fields(t) {
		name := jsonName(f)
		if _, dup := sch.Properties[name]; dup {
			continue // the shallower field wins, as in encoding/json
		}
		p, err := s.schemaOf(f.Type, strict)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		if e, ok := f.Tag.Lookup("enum"); ok {
			en, known := s.Named[e]
			if !known {
				return nil, fmt.Errorf("%s.%s: enum %q is not declared", t, f.Name, e)
			}
			if _, done := s.comps[e]; !done {
				s.comps[e] = enumSchema(en)
			}
			ref := &jsonschema.Schema{Ref: s.prefix() + e}
			if p.Type == "array" {
				p.Items = ref
			} else {
				p = ref
			}
		}
		if c, ok := f.Tag.Lookup("const"); ok {
			var v any = c
			p.Const = &v
		}
		if doc, ok := f.Tag.Lookup("jsonschema"); ok {
			p.Description = doc
		}
		sch.Properties[name] = p
		sch.PropertyOrder = append(sch.PropertyOrder, name)
		opts := f.Tag.Get("json")
		if !strings.Contains(opts, ",omitempty") && !strings.Contains(opts, ",omitzero") {
			sch.Required = append(sch.Required, name)
		}
	}
	if strict {
		// The daemon refuses a field it does not know.
		sch.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	return sch, nil
}

// clean makes what jsonschema-go wrote fit a JSON API: no value is null
// (a nil slice or map this API writes is left out or written empty, and
// the tests hold every answer to its schema), and a reference stands
// alone with its description.
func clean(sch *jsonschema.Schema) {
	if sch == nil {
		return
	}
	if sch.Ref != "" {
		sch.Type, sch.Types = "", nil
	}
	if len(sch.Types) > 0 {
		kept := slices.DeleteFunc(slices.Clone(sch.Types), func(t string) bool { return t == "null" })
		sch.Types = nil
		if len(kept) == 1 {
			sch.Type = kept[0]
		} else {
			sch.Types = kept
		}
	}
	clean(sch.Items)
	clean(sch.AdditionalProperties)
	for _, p := range sch.Properties {
		clean(p)
	}
}

func enumSchema(e Enum) *jsonschema.Schema {
	vals := make([]any, len(e.Values))
	for i, v := range e.Values {
		vals[i] = v
	}
	sch := &jsonschema.Schema{Type: "string", Enum: vals}
	if len(e.Doc) == len(e.Values) {
		var b strings.Builder
		for i, v := range e.Values {
			fmt.Fprintf(&b, "- `%s`: %s\n", v, e.Doc[i])
		}
		sch.Description = strings.TrimSpace(b.String())
	}
	return sch
}

// fields are the fields of struct t that JSON reads and writes, those of
// embedded structs included, by encoding/json's rules: an embedded struct
// without a JSON name gives its fields, and of two fields of one JSON
// name the shallower wins. (reflect.VisibleFields hides a field by its Go
// name: AgentsAnswer embeds Agents, whose own field Agents it hid.)
func fields(t reflect.Type) []reflect.StructField {
	type found struct {
		f     reflect.StructField
		depth int
	}
	var order []string
	byName := map[string]found{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			f.Index = append(append([]int{}, index...), i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
				walk(ft, f.Index, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			if prev, ok := byName[name]; ok && prev.depth <= depth {
				continue
			}
			if _, ok := byName[name]; !ok {
				order = append(order, name)
			}
			byName[name] = found{f, depth}
		}
	}
	walk(t, nil, 0)
	out := make([]reflect.StructField, 0, len(order))
	for _, name := range order {
		out = append(out, byName[name].f)
	}
	return out
}

// jsonName is the name JSON gives field f.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// Fields are the JSON names of struct t's fields, with their description
// (the jsonschema tag) and whether they may be left out: what a query's
// parameters are made of.
func Fields(t reflect.Type) []Field {
	var out []Field
	for _, f := range fields(t) {
		opts := f.Tag.Get("json")
		out = append(out, Field{Name: jsonName(f), Doc: f.Tag.Get("jsonschema"), Type: f.Type,
			Optional: strings.Contains(opts, ",omitempty") || strings.Contains(opts, ",omitzero"), Enum: f.Tag.Get("enum"), Index: f.Index})
	}
	return out
}

// Field is one field of a struct, as JSON names it.
type Field struct {
	Name, Doc string
	Type      reflect.Type
	Optional  bool
	Enum      string // the enumeration its tag names
	Index     []int  // for reflect.Value.FieldByIndex
}
