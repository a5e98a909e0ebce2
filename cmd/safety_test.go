package cmd

import "testing"

// --meta keys and values are typed with the message: cleaned, to one line.
func TestMetaIsCleaned(t *testing.T) {
	e := envelopeFlags{typ: "text", meta: []string{"k=v1\x1b[201~\rINJECTED\r", "k2\x1b[31m=a\nb"}}
	env, err := e.build()
	if err != nil {
		t.Fatal(err)
	}
	if env.Metadata["k"] != "v1INJECTED" || env.Metadata["k2"] != "a b" || len(env.Metadata) != 2 {
		t.Fatalf("metadata %q", env.Metadata)
	}
}
