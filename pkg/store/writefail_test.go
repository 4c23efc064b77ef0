package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

const envFullChild = "OUTBOX_STORE_TEST_DISKFULL_DIR"

// TestDiskFullChild runs in a child process: it caps the file size with
// RLIMIT_FSIZE (the disk-full stand-in), appends until a write fails, lifts
// the cap and appends again.
func TestDiskFullChild(t *testing.T) {
	dir := os.Getenv(envFullChild)
	if dir == "" {
		return
	}
	signal.Ignore(syscall.SIGXFSZ)
	s, err := store.Open(dir, store.Options{CompactMinBytes: -1})
	if err != nil {
		fmt.Println("FATAL", err)
		return
	}
	acked := 0
	fi, _ := os.Stat(filepath.Join(dir, store.FileName))
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim)
	_ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(fi.Size()), Max: lim.Max})
	for i := 0; i < 200000; i++ {
		if err := s.Append(context.Background(), [][]byte{payload(i)}); err != nil {
			fmt.Println("ERR", err)
			break
		}
		acked++
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	if err := s.Append(context.Background(), [][]byte{payload(999999)}); err != nil {
		fmt.Println("FATAL after lifting the cap:", err)
		return
	}
	acked++
	st := s.Stats()
	fmt.Println("ACKED", acked, st.Events)
	_ = s.Close()
}

func TestStore_WriteErrorIsReturnedAndWritesResume(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	fill(t, s, 10)
	_ = s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envFullChild+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "ERR store: ") || !strings.Contains(text, "file too large") {
		t.Fatalf("child saw no wrapped write error:\n%s", text)
	}
	var acked, events int
	i := strings.Index(text, "ACKED ")
	if i < 0 {
		t.Fatalf("child did not resume:\n%s", text)
	}
	if _, err := fmt.Sscanf(text[i:], "ACKED %d %d", &acked, &events); err != nil {
		t.Fatal(err)
	}
	t.Logf("child: %s", text)
	s = mustOpen(t, dir, store.Options{}) // full check
	if got := len(drainIDs(t, s)); got != acked+10 || events != acked+10 {
		t.Fatalf("after a write error: %d stored, stats said %d, want %d acknowledged", got, events, acked+10)
	}
}
