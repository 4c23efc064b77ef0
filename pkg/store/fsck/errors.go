package fsck

import (
	"errors"
	"fmt"
)

// The errors that say a file is damaged, shared with the store, which wraps them in its
// *CorruptError.

// ErrDamaged wraps every finding of the structure check: the file is not
// what bbolt wrote.
var ErrDamaged = errors.New("damaged")

// ErrCheckAborted is what CheckRecords returns once its quit channel is closed (the store
// closing under a background check).
var ErrCheckAborted = errors.New("check aborted")

// PanicErr is what a panic inside bbolt (r) says about the file.
func PanicErr(r any) error {
	return fmt.Errorf("%w: bbolt failed reading a page (%v)", ErrDamaged, r)
}
