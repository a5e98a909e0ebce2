//go:build !linux && !darwin

package integration

import "errors"

// exchange and renameNoReplace have no portable form: the callers look
// before they rename instead.
func exchange(a, b string) error { return errors.ErrUnsupported }

func renameNoReplace(from, to string) error { return errors.ErrUnsupported }
