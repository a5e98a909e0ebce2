//go:build !linux

package lock

import (
	"context"
	"time"
)

// dirWatch is Linux's inotify; elsewhere waiters poll.
type dirWatch struct{}

func watchDir(string) *dirWatch { return nil }

func (w *dirWatch) wait(ctx context.Context, d time.Duration) bool { return sleep(ctx, d) }

func (w *dirWatch) close() {}
