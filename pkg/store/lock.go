package store

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

// LockFile is the name of the lock file inside the data directory. It holds
// the pid of the owner; the lock itself is a non-blocking flock on it.
const LockFile = "outbox.lock"

// dirLock is an exclusive flock on the data directory's lock file.
type dirLock struct{ f *os.File }

// lockDir takes the directory lock at once or fails with errs.ErrLocked.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
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
			return nil, fmt.Errorf("data directory %s is in use by another outbox process (pid %s); stop it or pass --data-dir: %w", dir, pid, errs.ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock. The file stays (removing it would race a new owner).
func (l *dirLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}

// Owner returns the pid of the process that holds dir's lock (an agent running on it, which
// `outbox reload` signals). When no process holds it (no lock file, or its lock is free) the
// error wraps errs.ErrNotOwned. Owner never takes the lock for longer than the probe, and
// never writes the file.
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
