package queue_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

// The tests below re-execute the test binary as a child process selected by
// these variables; the child "tests" do nothing in a normal run.
const (
	envChild = "OUTBOX_QUEUE_TEST_CHILD"
	envDir   = "OUTBOX_QUEUE_TEST_DIR"
	envCycle = "OUTBOX_QUEUE_TEST_CYCLE"
)

type idEvent struct {
	ID string `json:"id"`
}

func idOf(t testing.TB, e []byte) string {
	var v idEvent
	if err := json.Unmarshal(e, &v); err != nil {
		t.Fatalf("stored event %q: %v", e, err)
	}
	return v.ID
}

// TestCrashChild is the child of TestQueue_SurvivesSIGKILL: 8 producers and
// one consumer; it prints "E id" after each acknowledged Enqueue, "L ids"
// before an Ack/DeadLetter, "A first-id" / "D first-id" after it returned.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(envChild)
	if mode != "crash" && mode != "crash-ooo" {
		return
	}
	q, err := queue.Open(os.Getenv(envDir), queue.Config{})
	if err != nil {
		fmt.Println("OPEN", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		_, _ = os.Stdout.WriteString(s + "\n")
		mu.Unlock()
	}
	cycle := os.Getenv(envCycle)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("c%s-g%d-%06d", cycle, g, i)
				if err := q.Enqueue(context.Background(), []byte(`{"id":"`+id+`"}`)); err != nil {
					say("ERR " + err.Error())
					return
				}
				say("E " + id)
			}
		}()
	}
	if mode == "crash-ooo" {
		consumeOutOfOrder(t, q, say)
		return
	}
	for n := 0; ; n++ {
		b, err := q.Lease(context.Background(), 20, 1<<20)
		if err != nil {
			say("ERR " + err.Error())
			return
		}
		if b == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		time.Sleep(5 * time.Millisecond) // consume slower than intake, so a backlog crosses restarts
		ids := make([]string, len(b.Events))
		for i, e := range b.Events {
			ids[i] = idOf(t, e)
		}
		say("L " + strings.Join(ids, ","))
		if n%3 == 2 {
			err = b.DeadLetter(context.Background(), queue.DeadInfo{Reason: "test"})
			say("D " + ids[0])
		} else {
			err = b.Ack(context.Background())
			say("A " + ids[0])
		}
		if err != nil {
			say("ERR " + err.Error())
			return
		}
	}
}

func TestQueue_SurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	surviveSIGKILL(t, "crash")
}

// surviveSIGKILL kills the child of mode 5 times while it enqueues and consumes, and checks
// that nothing acknowledged was lost, nothing acked or dead-lettered came back, and every batch
// cut by a kill is whole.
func surviveSIGKILL(t *testing.T, mode string) {
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)

	enqueued := map[string]bool{}
	leased := map[string]bool{} // leased, fate unknown unless confirmed below
	batches := map[string][]string{}
	acked, dead := map[string]bool{}, map[string]bool{}
	for cycle := 0; cycle < 5; cycle++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"="+mode, envDir+"="+dir, fmt.Sprintf("%s=%d", envCycle, cycle))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 300 + rng.IntN(3000) // acknowledged events before the kill
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			kind, rest, _ := strings.Cut(line, " ")
			switch kind {
			case "E":
				enqueued[rest] = true
				if n++; n == killAfter {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
			case "L":
				ids := strings.Split(rest, ",")
				batches[ids[0]] = ids
				for _, id := range ids {
					leased[id] = true
				}
			case "A", "D":
				for _, id := range batches[rest] {
					if kind == "A" {
						acked[id] = true
					} else {
						dead[id] = true
					}
				}
			default:
				_ = cmd.Process.Kill()
				t.Fatalf("child: %s", line)
			}
		}
		_ = cmd.Wait()
		if n < killAfter {
			t.Fatalf("cycle %d: child ended after %d acknowledged events, before the kill", cycle, n)
		}
	}

	q := testutil.MustOpenQueueAt(t, dir, queue.Config{}) // runs the full check
	queued := map[string]bool{}
	last := map[string]string{} // producer → last id seen
	lastCycle := -1
	for _, e := range testutil.DrainAll(t, q) {
		id := idOf(t, e)
		if queued[id] {
			t.Fatalf("%s is queued twice", id)
		}
		queued[id] = true
		var c, g, i int
		if _, err := fmt.Sscanf(id, "c%d-g%d-%d", &c, &g, &i); err != nil {
			t.Fatal(err)
		}
		if c < lastCycle {
			t.Fatalf("%s (cycle %d) after an event of cycle %d: FIFO lost across restart", id, c, lastCycle)
		}
		lastCycle = c
		p := fmt.Sprintf("c%d-g%d", c, g)
		if id <= last[p] {
			t.Fatalf("%s after %s: producer order lost", id, last[p])
		}
		last[p] = id
	}
	deadIDs := map[string]bool{}
	list, err := q.DeadList()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list {
		db, err := q.DeadGet(d.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range db.Events {
			deadIDs[idOf(t, e)] = true
		}
	}
	for id := range enqueued {
		if !queued[id] && !deadIDs[id] && !leased[id] {
			t.Fatalf("acknowledged %s is lost", id)
		}
	}
	for id := range acked {
		if queued[id] || deadIDs[id] {
			t.Fatalf("acked %s is still stored", id)
		}
	}
	for id := range dead {
		if !deadIDs[id] || queued[id] {
			t.Fatalf("dead-lettered %s is not (only) in the dead bucket", id)
		}
	}
	confirmed := map[string]bool{}
	for id := range acked {
		confirmed[id] = true
	}
	for id := range dead {
		confirmed[id] = true
	}
	for first, ids := range batches {
		if confirmed[first] {
			continue
		}
		// A batch whose Ack/DeadLetter was cut by the kill: all or nothing.
		var inQueue, inDead int
		for _, id := range ids {
			if queued[id] {
				inQueue++
			}
			if deadIDs[id] {
				inDead++
			}
		}
		if (inQueue != 0 && inQueue != len(ids)) || (inDead != 0 && inDead != len(ids)) {
			t.Fatalf("batch %s cut by the kill is split: %d of %d queued, %d dead", first, inQueue, len(ids), inDead)
		}
	}
	for id := range deadIDs {
		if queued[id] {
			t.Fatalf("%s is both queued and dead", id)
		}
	}
	t.Logf("%d acknowledged, %d queued, %d acked, %d dead after 5 SIGKILLs", len(enqueued), len(queued), len(acked), len(deadIDs))
}

// TestLockChild is the child of TestOpen_SecondProcessFailsAtOnce.
func TestLockChild(t *testing.T) {
	if os.Getenv(envChild) != "lock" {
		return
	}
	_, err := queue.Open(os.Getenv(envDir), queue.Config{})
	if errors.Is(err, errs.ErrLocked) {
		fmt.Println("LOCKED", err)
		return
	}
	fmt.Println("UNEXPECTED", err)
}

func TestOpen_SecondProcessFailsAtOnce(t *testing.T) {
	_, dir := testutil.MustOpenQueue(t, queue.Config{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"=lock", envDir+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := fmt.Sprintf("LOCKED open queue: data directory %s is in use by another outbox process (pid %d)", dir, os.Getpid())
	if !strings.Contains(string(out), want) {
		t.Fatalf("child said %q, want %q", out, want)
	}
}
