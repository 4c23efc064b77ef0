package datadir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
)

func TestCheck_RefusesASymlinkedDataFileAndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere.db")
	if err := os.Symlink(target, filepath.Join(dir, datadir.FileName)); err != nil {
		t.Fatal(err)
	}
	_, err := datadir.Check(dir)
	if !errors.Is(err, errs.ErrUnsafeDataFile) || !strings.Contains(err.Error(), target) || !strings.Contains(err.Error(), "data_dir") {
		t.Fatalf("Check = %v, want ErrUnsafeDataFile naming the target and what to do", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target exists after Check: %v", err)
	}
}

func TestCheck_WarnsOnADirectoryOthersCanWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode os.FileMode
		warn bool
	}{
		{"0700 is quiet", 0o700, false},
		{"0750 is quiet", 0o750, false},
		{"group-writable 0770 warns", 0o770, true},
		{"world-writable 0777 warns", 0o777, true},
		{"sticky world-writable 1777 warns", 0o777 | os.ModeSticky, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			warning, err := datadir.Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := warning != ""; got != tc.warn {
				t.Fatalf("warning %q, want one: %v", warning, tc.warn)
			}
			if tc.warn && !strings.Contains(warning, "chmod 0750 "+dir) {
				t.Errorf("warning %q does not say how to fix it", warning)
			}
		})
	}
}

func TestLock_RefusesASymlinkedLockFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "planted")
	if err := os.Symlink(target, filepath.Join(dir, datadir.LockFile)); err != nil {
		t.Fatal(err)
	}
	if l, err := datadir.Lock(dir); err == nil {
		_ = l.Unlock()
		t.Fatal("Lock followed a symlinked lock file")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}
