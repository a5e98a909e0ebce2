package courier

import (
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
)

func TestSummarize(t *testing.T) {
	r := func(v delivery.Verdict) Result { return Result{Outcome: dispatch.Outcome{Verdict: v}} }
	for _, tt := range []struct {
		name    string
		results []Result
		want    BroadcastVerdict
		ok      bool
	}{
		{"all submitted", []Result{r(delivery.Submitted), r(delivery.Queued)}, AllDelivered, true},
		{"recorded only", []Result{r(delivery.Recorded)}, AllDelivered, true},
		{"one deferred", []Result{r(delivery.Submitted), r(delivery.Deferred)}, SomeDeferred, true},
		{"one failed", []Result{r(delivery.Submitted), r(delivery.Failed)}, Partial, false},
		{"deferred and failed", []Result{r(delivery.Deferred), r(delivery.Typed)}, Partial, false},
		{"all failed", []Result{r(delivery.Failed), r(delivery.NotFound)}, NoneTook, false},
	} {
		s := Summarize(tt.results)
		if s.Verdict != tt.want || s.OK() != tt.ok {
			t.Errorf("%s: verdict %s ok %v, want %s %v", tt.name, s.Verdict, s.OK(), tt.want, tt.ok)
		}
	}
}
