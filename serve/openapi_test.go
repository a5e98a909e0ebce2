package serve

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
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
