package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// GET /v1/version says which agentmsg answers: the version, and the commit
// and date a release stamped (internal/buildinfo), when known.
func TestVersionSaysWhatWasBuilt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts Options
		want map[string]any
	}{
		{Options{Version: "1.2.3", Commit: "0a1b2c3", Date: "2026-12-07T10:00:00Z"},
			map[string]any{"version": "1.2.3", "commit": "0a1b2c3", "date": "2026-12-07T10:00:00Z"}},
		{Options{Version: "v1.2.3"}, map[string]any{"version": "v1.2.3"}},
	} {
		d := &Daemon{opts: tt.opts, backend: &backend{version: tt.opts.Version}, pid: 42}
		rec := httptest.NewRecorder()
		d.versionInfo(rec, httptest.NewRequest(http.MethodGet, "/v1/version", nil))
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v (%s)", k, got[k], v, rec.Body)
			}
		}
		if _, ok := got["commit"]; ok != (tt.opts.Commit != "") {
			t.Errorf("commit present: %v (%s)", ok, rec.Body)
		}
		if got["pid"] != float64(42) {
			t.Errorf("pid = %v", got["pid"])
		}
	}
}
