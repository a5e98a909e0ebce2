package alerts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Teller tells the world of an alert: a Notifier.
type Teller interface {
	Enabled() bool
	Notify(ctx context.Context, a Alert) error
}

// Once tells each condition once among every process that watches it:
// each agentmsg top runs its own Engine, and two of them told every
// alert twice. Under the condition's lock it reads when the condition was
// last told (a file in Dir): told since the condition began (a.Since), it
// is not told again; else it is, and the time is written.
//
// An observer that starts while a condition holds counts it from its own
// start (an agent's dialog seen first then): one that starts after the
// condition was told tells it again.
type Once struct {
	Teller
	Dir string
	// Lock takes the named lock, waiting at most as long as ctx (a
	// lock.Dir's Named).
	Lock func(ctx context.Context, name string) (unlock func(), err error)
}

// Notify tells a unless it was told since its condition began.
func (o Once) Notify(ctx context.Context, a Alert) error {
	sum := sha256.Sum256([]byte(a.key()))
	name := "alert-" + hex.EncodeToString(sum[:8])
	unlock, err := o.Lock(ctx, name)
	if err != nil {
		return fmt.Errorf("the alert's lock: %w", err)
	}
	defer unlock()
	path := filepath.Join(o.Dir, name)
	if b, err := os.ReadFile(path); err == nil {
		if told, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b))); err == nil && !told.Before(a.Since) {
			return nil // told already, by this or another observer
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := o.Teller.Notify(ctx, a); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	at := a.Time
	if at.IsZero() {
		at = time.Now()
	}
	return os.WriteFile(path, []byte(at.UTC().Format(time.RFC3339Nano)+"\n"), 0o600)
}
