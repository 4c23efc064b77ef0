package store_test

import (
	"errors"
	"os"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
)

func TestOwner_NamesThePidOfTheOpenStore_AndErrNotOwnedOnceClosed(t *testing.T) {
	dir := t.TempDir()
	if _, err := store.Owner(dir); !errors.Is(err, errs.ErrNotOwned) {
		t.Fatalf("Owner of a directory never opened: %v, want errs.ErrNotOwned", err)
	}
	s := mustOpen(t, dir, store.Options{})
	pid, err := store.Owner(dir)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("Owner while open = %d, %v; want %d", pid, err, os.Getpid())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Owner(dir); !errors.Is(err, errs.ErrNotOwned) {
		t.Fatalf("Owner after Close: %v, want errs.ErrNotOwned (the lock file stays, its lock is free)", err)
	}
	mustOpen(t, dir, store.Options{}) // the probe left the lock free
}
