// Package broadcast fans work out to many targets at once.
package broadcast

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Each runs fn for every item, at most limit at a time, and returns the
// results in the order of items. fn reports failure in its result, never as
// an error, so one target's failure cannot cancel the others; only ctx ends
// the run early, and fn sees that through its ctx.
func Each[T, R any](ctx context.Context, items []T, limit int, fn func(context.Context, T) R) []R {
	results := make([]R, len(items))
	var g errgroup.Group
	if limit > 0 {
		g.SetLimit(limit)
	}
	for i, item := range items {
		g.Go(func() error {
			results[i] = fn(ctx, item)
			return nil
		})
	}
	_ = g.Wait() // fn returns no errors
	return results
}
