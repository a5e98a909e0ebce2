package harness

import (
	"slices"
	"time"
)

// Percentile is the p-th percentile of ds by nearest rank (50: the median,
// 100: the largest); 0 for none.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}
