package uploader_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// TestAsyncCrashChild re-executes the test binary as the child of
// TestEnqueueAsync_EventsWhoseDoneSawNilSurviveKill9, selected by these variables; it does
// nothing in a normal run.
const (
	envAsyncChild    = "OUTBOX_UPLOADER_ASYNC_CHILD"
	envAsyncDir      = "OUTBOX_UPLOADER_ASYNC_DIR"
	envAsyncEndpoint = "OUTBOX_UPLOADER_ASYNC_ENDPOINT"
	envAsyncCycle    = "OUTBOX_UPLOADER_ASYNC_CYCLE"
	envAsyncConc     = "OUTBOX_UPLOADER_ASYNC_CONCURRENCY" // upload.concurrency; "" keeps the default
)

// TestAsyncCrashChild calls EnqueueAsync in a loop from one goroutine (queue.sync: always)
// while its worker uploads to the parent's sink, and prints "D id" from each done(nil). It
// runs until it is killed.
func TestAsyncCrashChild(t *testing.T) {
	if os.Getenv(envAsyncChild) != "1" {
		return
	}
	cfg := uploader.DefaultConfig()
	cfg.DataDir = os.Getenv(envAsyncDir)
	cfg.Upload.Endpoint = os.Getenv(envAsyncEndpoint)
	cfg.Queue.Sync = "always"
	cfg.Batch.MaxEvents = 100
	if v := os.Getenv(envAsyncConc); v != "" {
		cfg.Upload.Concurrency = v
	}
	c, err := segment.Open(cfg)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		id := fmt.Sprintf("c%s-%07d", os.Getenv(envAsyncCycle), i)
		err := c.EnqueueAsync(context.Background(), func(err error) {
			if err != nil {
				fmt.Fprintln(out, "ERR", err)
			} else {
				fmt.Fprintln(out, "D", id)
			}
			// Flushed per done: a line the parent reads was acknowledged before the kill.
			_ = out.Flush()
		}, map[string]any{"type": "track", "event": "Crash", "userId": "u1", "messageId": id})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
	}
}

func TestEnqueueAsync_EventsWhoseDoneSawNilSurviveKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	s := sinkOK(t)
	killNineAndCheck(t, s, "")
}

func TestInFlight_Kill9WithManyBatchesInFlightAndAcksOutOfOrder_LosesNothingAndBoundsDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	// Answers that take 1 ms or 30 ms at random: batches overtake each other and their acks
	// land out of order.
	s := startScript(t, "seed=7,200:delay=30ms:40%,200:delay=1ms:default")
	const conc = 16
	dups := killNineAndCheck(t, s, fmt.Sprint(conc))
	// Each kill re-sends at most the batches that were in flight (of at most 100 events).
	if limit := int64(3 * conc * 100); dups > limit {
		t.Errorf("%d duplicates after 3 kills, want at most %d (3 × %d batches in flight × 100 events)", dups, limit, conc)
	}
}

// killNineAndCheck runs the EnqueueAsync child 3 times against s, killing it with SIGKILL
// after a number of acknowledged events, then uploads what is left and checks that every
// acknowledged event arrived. It returns the duplicates the collector saw.
func killNineAndCheck(t *testing.T, s *sink.Server, concurrency string) int64 {
	t.Helper()
	dir := t.TempDir()
	acked := map[string]bool{}
	for cycle := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAsyncCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envAsyncChild+"=1", envAsyncDir+"="+dir, envAsyncEndpoint+"="+s.URL()+"/v1/batch",
			fmt.Sprintf("%s=%d", envAsyncCycle, cycle), envAsyncConc+"="+concurrency)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 2000 + 1500*cycle // acknowledged events before the kill
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			if kind != "D" {
				_ = cmd.Process.Kill()
				t.Fatalf("child: %s", sc.Text())
			}
			acked[rest] = true
			if n++; n == killAfter {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		_ = cmd.Wait()
		if n < killAfter {
			t.Fatalf("cycle %d: child ended after %d acknowledged events, before the kill", cycle, n)
		}
	}
	// Restart on the data directory: whatever the children left queued is uploaded now.
	c := open(t, testConfig(dir, s.URL()+"/v1/batch"))
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range s.Events() {
		seen[messageID(t, e)] = true
	}
	missing := 0
	for id := range acked {
		if !seen[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d events whose done(nil) was observed never arrived", missing, len(acked))
	}
	t.Logf("%d acknowledged events over 3 kill -9 cycles, all delivered (%d events at the sink, duplicates %d)",
		len(acked), s.Stats().Events, s.Stats().Duplicates)
	return s.Stats().Duplicates
}

func messageID(t *testing.T, e []byte) string {
	t.Helper()
	var v struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal(e, &v); err != nil {
		t.Fatalf("event %s: %v", e, err)
	}
	return v.MessageID
}
