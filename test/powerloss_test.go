package test_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// A power loss drops what the page cache held and the disk never got. SIGKILL cannot show
// that (the kernel keeps the cache), so this test puts the data directory on an ext4 file
// system in a loop-mounted image, kills the agent, and copies the image as the disk holds it:
// what the agent fsynced is on the device, what it only wrote is still dirty in the inner file
// system's cache and is not. The copy, mounted, must deliver every event the agent
// acknowledged. The inner file system is mounted with commit=600 so that neither its journal
// nor the kernel's writeback (30 s by default) flushes for the agent what it did not flush itself
// within the test's few seconds.
//
// It needs root, loop devices, mkfs.ext4 and mount; where the machine has them not, it skips
// and says why (make test runs it verbosely, so the reason shows in CI's output).
func TestPowerLoss_EveryAcknowledgedEventSurvivesLosingUnsyncedWrites(t *testing.T) {
	if reason := powerLossUnsupported(); reason != "" {
		t.Skipf("power-loss test cannot run on this machine: %s", reason)
	}
	for _, mode := range encryptionModes {
		t.Run(mode.name, func(t *testing.T) { powerLoss(t, mode.env(keyFile(t), nil)) })
	}
}

// powerLoss is the power-loss test with env added to every agent's configuration.
func powerLoss(t *testing.T, env map[string]string) {
	work := t.TempDir()
	img := filepath.Join(work, "disk.img")
	mnt := filepath.Join(work, "mnt")
	mustRun(t, "truncate", "-s", "256M", img)
	mustRun(t, "mkfs.ext4", "-q", "-F", img)
	if err := mountImage(t, img, mnt); err != nil {
		t.Skipf("power-loss test cannot run on this machine: mount a loop image: %v", err)
	}

	// Phase 1: the collector refuses everything, so every acknowledged event stays queued.
	s := sinktest.StartScript(t, "503:default")
	var log ackLog
	phase1 := map[string]string{"OUTBOX_QUEUE_SYNC": "always"}
	for k, v := range env {
		phase1[k] = v
	}
	a := startAgent(t, filepath.Join(mnt, "data"), s.URL()+"/v1/batch", phase1)
	requests, wait := log.produce(a.url+"/v1/batch", "power", load{producers: 4, perBatch: 10, max: 50}, nil)
	wait()
	if requests.Load() == 0 {
		t.Fatal("the agent acknowledged no request")
	}
	a.signal(t, syscall.SIGKILL)
	a.wait(t, 5*time.Second)

	// The cut: the image as the device holds it, without syncing the file system on it.
	lost := filepath.Join(work, "after-power-loss.img")
	copyFile(t, img, lost)
	mustRun(t, "umount", mnt)

	// Phase 2: the copy, mounted, drains into a collector that accepts.
	mnt2 := filepath.Join(work, "mnt2")
	if err := mountImage(t, lost, mnt2); err != nil {
		t.Fatalf("mount the image after the power loss: %v", err)
	}
	_ = s.SetScript(sink.Script{})
	startAgent(t, filepath.Join(mnt2, "data"), s.URL()+"/v1/batch", env)
	acked := log.ids
	missing := waitDelivered(t, s, acked, 20*time.Second)
	t.Logf("%d acknowledged events; after the power loss the sink got %d", len(acked), s.Stats().Unique)
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events did not survive the loss of unsynced writes", missing, len(acked))
	}
}

// powerLossUnsupported says what the machine lacks for the power-loss test, or "".
func powerLossUnsupported() string {
	if os.Geteuid() != 0 {
		return "it needs root to mount a loop image"
	}
	for _, tool := range []string{"truncate", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed"
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return "no loop device support (/dev/loop-control)"
	}
	return ""
}

// mountImage loop-mounts img at dir with a 600 s journal commit interval and unmounts it when
// the test ends.
func mountImage(t *testing.T, img, dir string) error {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("mount", "-o", "loop,commit=600", img, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return nil
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
}

// copyFile copies src to dst through the page cache of the outer file system, which holds what
// the loop device has written.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
