package openapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type color string

type inner struct {
	Inner []string `json:"inner"`
	Note  string   `json:"note,omitempty" jsonschema:"a note"`
}

// outer embeds inner and has a field named as inner's: JSON writes both
// inner's fields (reflect.VisibleFields would hide Inner.Inner).
type outer struct {
	inner
	Color  color    `json:"color"`
	Kind   string   `json:"kind" const:"outer"`
	Reason string   `json:"reason,omitempty" enum:"Reason"`
	Next   *outer   `json:"next,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	skip   int
}

func TestSchemaFollowsTheTags(t *testing.T) {
	s := &Schemas{
		Enums: map[reflect.Type]Enum{reflect.TypeFor[color](): {Values: []string{"red", "blue"}, Doc: []string{"warm", "cold"}}},
		Named: map[string]Enum{"Reason": {Values: []string{"busy"}}},
	}
	for _, strict := range []bool{true, false} {
		s := *s
		ref, err := s.Ref(reflect.TypeFor[outer](), strict)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Ref != "#/components/schemas/outer" {
			t.Fatalf("ref %+v", ref)
		}
		c := s.Components()
		o := c["outer"]
		b, _ := json.Marshal(o)
		props := slices.Sorted(func(yield func(string) bool) {
			for k := range o.Properties {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(props, []string{"color", "inner", "kind", "next", "note", "reason", "tags"}) {
			t.Errorf("properties %v:\n%s", props, b)
		}
		if !slices.Equal(o.Required, []string{"inner", "color", "kind"}) {
			t.Errorf("required %v", o.Required)
		}
		if o.Properties["color"].Ref != "#/components/schemas/color" || c["color"] == nil || !strings.Contains(c["color"].Description, "cold") {
			t.Errorf("the enumeration: %+v %+v", o.Properties["color"], c["color"])
		}
		if o.Properties["reason"].Ref != "#/components/schemas/Reason" || o.Properties["next"].Ref != "#/components/schemas/outer" {
			t.Errorf("references: %s", b)
		}
		if o.Properties["kind"].Const == nil || *o.Properties["kind"].Const != "outer" || o.Properties["note"].Description != "a note" {
			t.Errorf("const and description: %s", b)
		}
		if o.Properties["tags"].Type != "array" || len(o.Properties["tags"].Types) != 0 {
			t.Errorf("a list may not be null: %s", b)
		}
		if (o.AdditionalProperties != nil) != strict {
			t.Errorf("strict %v: additionalProperties %v", strict, o.AdditionalProperties)
		}
	}
}
