package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/outboxhq/outbox/pkg/errs"
)

// The directory lock: a non-blocking flock on <dir>/outbox.lock, which holds the owner's pid.

// DirLock is an exclusive flock on the data directory's lock file.
type DirLock struct{ f *os.File }

// Lock takes the directory lock at once or fails with errs.ErrLocked.
func Lock(dir string) (*DirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, os.ErrPermission) {
		return nil, permissionError(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("data directory %s is in use by another outbox process (pid %s); stop it or use another data directory: %w", dir, pid, errs.ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock. The file stays (removing it would race a new owner).
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}

// Owner is store.Owner: the pid of the process that holds dir's lock, found with a shared
// probe of the lock that is released at once, never a write; errs.ErrNotOwned when none does.
func Owner(dir string) (int, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("data directory %s: no lock file: %w", dir, errs.ErrNotOwned)
	}
	if err != nil {
		return 0, fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0, fmt.Errorf("data directory %s: its lock is free: %w", dir, errs.ErrNotOwned)
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		return 0, fmt.Errorf("lock %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read lock file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("lock file %s is held but names no pid (%q)", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}
