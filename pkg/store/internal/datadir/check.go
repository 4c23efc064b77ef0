package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/outboxhq/outbox/pkg/errs"
)

// Check looks at what a data directory's owner must trust before it opens the data file: it
// refuses a data file that is a symbolic link (errs.ErrUnsafeDataFile, wrapped with what to do),
// since the file is opened for writing and created when missing, and a link would let whoever
// can write the directory point the agent, perhaps running as root, at a file of theirs. It
// returns a warning (not an error) when the directory is writable by its group or by everyone:
// anyone who can write there can replace the data file or its lock. The store logs it.
func Check(dir string) (warning string, err error) {
	path := filepath.Join(dir, FileName)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", statError(path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return "", fmt.Errorf("%w: %s links to %q; outbox does not follow a link for its data file: move the file "+
			"itself into the data directory (mv --no-target-directory %q %s), or set data_dir to the directory that holds it",
			errs.ErrUnsafeDataFile, path, target, target, path)
	}
	di, err := os.Stat(dir)
	if err != nil {
		return "", statError(dir, err)
	}
	if perm := di.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("data directory %s is writable by its group or by everyone (mode %04o): any user who can write "+
			"there can replace the queue file or its lock; restrict it with chmod 0750 %s", dir, perm, dir), nil
	}
	return "", nil
}

// statError wraps a failure to look at path, with a hint when it is a permission problem.
func statError(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return permissionError(path, err)
	}
	return err
}

// permissionError explains a permission denied on the data directory or a file in it.
func permissionError(path string, err error) error {
	return fmt.Errorf("%w: %s: %v; run outbox as the user that owns the data directory (see ls -ld %s), "+
		"or give that user the directory (chown -R USER %s)", errs.ErrDataDirPermission, path, err, filepath.Dir(path), filepath.Dir(path))
}

// Create makes the data directory (mode 0750) when it is missing; a permission problem is
// returned wrapping errs.ErrDataDirPermission, with what to do.
func Create(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return permissionError(filepath.Join(dir, "."), err)
		}
		return fmt.Errorf("create data directory: %w", err)
	}
	return nil
}
