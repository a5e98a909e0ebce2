package chaos

import (
	"fmt"
	"slices"
	"testing"
)

// A seed is a scenario: drawn twice, it is the same world and the same
// steps, message texts included.
func TestSeedReplaysTheScenario(t *testing.T) {
	on, _ := parseKinds("all")
	draw := func() string {
		rng := newRand(42)
		spec := drawWorld(rng, on)
		return fmt.Sprint(spec, drawScenario(rng, on, spec, 200))
	}
	if a, b := draw(), draw(); a != b {
		t.Fatal("two draws of seed 42 differ")
	}
}

// Each kind left out leaves its steps out; with none, only sends,
// broadcasts, deliver runs and pauses remain.
func TestKindsChooseTheSteps(t *testing.T) {
	on, err := parseKinds("all,-busy,-dialog,-draft,-windows,-restart,-disk,-signal,-concurrent,-daemon")
	if err != nil {
		t.Fatal(err)
	}
	if got := kindList(on); got != "server2,hooks,nobp,repl,texts,alias" {
		t.Fatalf("kinds %s", got)
	}
	on, _ = parseKinds("")
	rng := newRand(7)
	spec := drawWorld(rng, on)
	for _, st := range drawScenario(rng, on, spec, 300) {
		if !slices.Contains([]stepKind{stepSend, stepBroadcast, stepDeliver, stepPause}, st.kind) {
			t.Fatalf("with no kinds, step %s", st)
		}
		for _, m := range st.msgs {
			if m.shape != shapeShort || m.alias {
				t.Fatalf("with no kinds, message %+v", m)
			}
		}
	}
	if _, err := parseKinds("windows,typo"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}
