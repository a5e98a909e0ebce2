package serve

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/wire"
)

// The OpenAPI document describes exactly the endpoints the daemon serves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	var served, described []string
	for _, e := range endpoints {
		served = append(served, e.method+" "+e.path)
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			described = append(described, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(described)
	if !slices.Equal(served, described) {
		t.Errorf("the daemon serves\n  %s\nthe document describes\n  %s", strings.Join(served, "\n  "), strings.Join(described, "\n  "))
	}
}

// Each request body the document describes names exactly the fields the
// daemon reads (a misspelt one would be refused as unknown).
func TestOpenAPIDescribesEveryBody(t *testing.T) {
	bodies := map[string]any{
		"SendBody": sendBody{}, "ReplyBody": replyBody{}, "BroadcastBody": broadcastBody{}, "DeliverBody": deliverBody{},
		"RequestBody": requestBody{}, "ClaimBody": claimBody{}, "TeamBody": teamBody{}, "StatusBody": statusBody{},
		"CleanBody": cleanBody{}, "SpawnBody": spawnBody{}, "ShutdownBody": shutdownBody{}, "KillBody": killBody{},
		"ReapBody": reapBody{}, "WaitBody": waitBody{}, "InboxBody": inboxBody{}, "RetryBody": retryBody{},
		"TaskBody": taskBody{}, "WorkflowBody": workflowBody{}, "CLIRequest": wire.CLIRequest{},
	}
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct{ Schema schema } `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			ref := op.RequestBody.Content["application/json"].Schema.Ref
			if ref == "" {
				continue
			}
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			body, ok := bodies[name]
			if !ok {
				t.Errorf("%s %s: body %s: no Go type to check it against here", method, path, name)
				continue
			}
			described := slices.Sorted(maps.Keys(doc.Components.Schemas[name].fields(doc.Components.Schemas)))
			read := jsonFields(reflect.TypeOf(body))
			slices.Sort(read)
			if !slices.Equal(described, read) {
				t.Errorf("%s %s: %s describes %v; the daemon reads %v", method, path, name, described, read)
			}
		}
	}
}

// The documents of a delivery (send, broadcast) describe exactly the
// fields wire writes: a program reading the API learns every field from
// the document (older and while_busy_ignored were missing).
func TestOpenAPIDescribesTheDeliveryDocuments(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"Outcome": wire.Outcome{}, "Send": wire.Send{}, "Broadcast": wire.Broadcast{}} {
		described := slices.Sorted(maps.Keys(doc.Components.Schemas[name].fields(doc.Components.Schemas)))
		written := slices.Compact(slices.Sorted(slices.Values(jsonFields(reflect.TypeOf(v)))))
		if !slices.Equal(described, written) {
			t.Errorf("%s describes %v; wire writes %v", name, described, written)
		}
	}
}

// The event the stream sends is described field for field, and each
// type of event that is not a message's or an agent's is named.
func TestOpenAPIDescribesTheEvent(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	ev := doc.Components.Schemas["Event"]
	described := slices.Sorted(maps.Keys(ev.fields(doc.Components.Schemas)))
	written := slices.Sorted(slices.Values(jsonFields(reflect.TypeOf(eventlog.Event{}))))
	if !slices.Equal(described, written) {
		t.Errorf("Event describes %v; the log writes %v", described, written)
	}
	if !strings.Contains(string(ev.Properties["type"]), eventlog.TypeLost) {
		t.Errorf("Event's types do not name %s: %s", eventlog.TypeLost, ev.Properties["type"])
	}
}

type schema struct {
	Ref        string                     `json:"$ref"`
	AllOf      []schema                   `json:"allOf"`
	Properties map[string]json.RawMessage `json:"properties"`
}

// fields are the properties of s and of the schemas it is all of.
func (s schema) fields(all map[string]schema) map[string]bool {
	out := map[string]bool{}
	if s.Ref != "" {
		s = all[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	for name := range s.Properties {
		out[name] = true
	}
	for _, sub := range s.AllOf {
		maps.Copy(out, sub.fields(all))
	}
	return out
}

// jsonFields are the JSON names of a struct's fields, its embedded
// structs' included.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}
