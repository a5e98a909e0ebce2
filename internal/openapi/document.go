package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Operation is one endpoint: its method and path, what it takes and what
// it answers.
type Operation struct {
	ID          string // operationId: a word a generated client names its function after
	Method      string
	Path        string // with {name} for path parameters
	Summary     string
	Description string
	Tag         string
	// PathParams describe the path's {name}s, by name.
	PathParams map[string]string
	// Query is a struct whose fields are the query parameters; Body the
	// request body's type (JSON); either may be nil.
	Query, Body reflect.Type
	// BodyOptional: the body may be left out (an empty body is {}).
	BodyOptional bool
	Answers      []Answer
}

// Answer is one response of an operation.
type Answer struct {
	Status      int // 0: "default"
	Description string
	// Type is the JSON document's type (AnyOf: one of these); Media,
	// when set, another media type whose body Schema describes.
	Type   reflect.Type
	AnyOf  []reflect.Type
	Media  string
	Schema *jsonschema.Schema
	// Headers names response headers with their description.
	Headers map[string]string
}

// Document is a whole API.
type Document struct {
	Title, Version, Description string
	License, LicenseURL         string
	Servers                     []Server
	// Security: the schemes a request may use; an empty one in the list
	// means none (a Unix socket's client).
	SecuritySchemes map[string]any
	Security        []map[string][]string
	Tags            []Tag
	Operations      []Operation
}

// Server is where the API is reached.
type Server struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// Tag groups operations.
type Tag struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// Build writes the OpenAPI 3.1 document of d, its schemas registered in s.
func Build(d Document, s *Schemas) ([]byte, error) {
	paths := map[string]map[string]any{}
	ids := map[string]bool{}
	for _, op := range d.Operations {
		if ids[op.ID] {
			return nil, fmt.Errorf("two operations are %s", op.ID)
		}
		ids[op.ID] = true
		o, err := operation(op, s)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Method, op.Path, err)
		}
		if paths[op.Path] == nil {
			paths[op.Path] = map[string]any{}
		}
		paths[op.Path][strings.ToLower(op.Method)] = o
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title": d.Title, "version": d.Version, "description": d.Description,
			"license": map[string]string{"name": d.License, "url": d.LicenseURL},
		},
		"servers":  d.Servers,
		"security": d.Security,
		"tags":     d.Tags,
		"paths":    paths,
		"components": map[string]any{
			"schemas":         s.Components(),
			"securitySchemes": d.SecuritySchemes,
		},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func operation(op Operation, s *Schemas) (map[string]any, error) {
	o := map[string]any{"operationId": op.ID, "summary": op.Summary, "tags": []string{op.Tag}}
	if op.Description != "" {
		o["description"] = op.Description
	}
	var params []map[string]any
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		doc, ok := op.PathParams[m[1]]
		if !ok {
			return nil, fmt.Errorf("path parameter %s is not described", m[1])
		}
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": doc, "schema": map[string]string{"type": "string"}})
	}
	if op.Query != nil {
		for _, f := range Fields(op.Query) {
			sch, err := s.Ref(f.Type, true)
			if err != nil {
				return nil, fmt.Errorf("query %s: %w", f.Name, err)
			}
			if f.Enum != "" {
				sch = &jsonschema.Schema{Ref: s.prefix() + f.Enum}
				if _, ok := s.Named[f.Enum]; !ok {
					return nil, fmt.Errorf("query %s: enum %q is not declared", f.Name, f.Enum)
				}
				if _, done := s.comps[f.Enum]; !done {
					s.comps[f.Enum] = enumSchema(s.Named[f.Enum])
				}
			}
			p := map[string]any{"name": f.Name, "in": "query", "required": !f.Optional, "description": f.Doc, "schema": sch}
			if sch.Type == "array" {
				p["style"], p["explode"] = "form", false // types=a,b
			}
			params = append(params, p)
		}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if op.Body != nil {
		sch, err := s.Ref(op.Body, true)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		o["requestBody"] = map[string]any{"required": !op.BodyOptional,
			"content": map[string]any{"application/json": map[string]any{"schema": sch}}}
	}
	answers := map[string]any{}
	for _, a := range op.Answers {
		code := "default"
		if a.Status != 0 {
			code = strconv.Itoa(a.Status)
		}
		desc := a.Description
		if desc == "" {
			desc = http.StatusText(a.Status)
		}
		r := map[string]any{"description": desc}
		content := map[string]any{}
		if a.Type != nil {
			sch, err := s.Ref(a.Type, false)
			if err != nil {
				return nil, fmt.Errorf("answer %d: %w", a.Status, err)
			}
			content["application/json"] = map[string]any{"schema": sch}
		}
		if len(a.AnyOf) > 0 {
			sch := &jsonschema.Schema{}
			for _, t := range a.AnyOf {
				ref, err := s.Ref(t, false)
				if err != nil {
					return nil, fmt.Errorf("answer %d: %w", a.Status, err)
				}
				sch.AnyOf = append(sch.AnyOf, ref)
			}
			content["application/json"] = map[string]any{"schema": sch}
		}
		if a.Media != "" {
			content[a.Media] = map[string]any{"schema": a.Schema}
		}
		if len(content) > 0 {
			r["content"] = content
		}
		if len(a.Headers) > 0 {
			h := map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(a.Headers)) {
				h[name] = map[string]any{"description": a.Headers[name], "schema": map[string]string{"type": "string"}}
			}
			r["headers"] = h
		}
		answers[code] = r
	}
	o["responses"] = answers
	return o, nil
}
