package test_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/store"
)

// damageAllEnv, set to 1 (make test-damage), damages every page of the
// fixture and truncates it at every page; otherwise a sample with a fixed
// seed keeps make test fast.
const damageAllEnv = "OUTBOX_DAMAGE_ALL"

// damageSeedEnv, when set, replaces the campaign's fixed seed (for exploring
// other damage than make test's).
const damageSeedEnv = "OUTBOX_DAMAGE_SEED"

// quickExit spares each of the campaign's many short commands the race
// detector's one-second sleep at exit (GORACE is ignored without -race).
var quickExit = map[string]string{"GORACE": "atexit_sleep_ms=0"}

// damageCase is one damaged copy of the fixture and what must follow.
type damageCase struct {
	name string
	data []byte
	// open is the exit code every command that opens the file must give: 0
	// (the damage is where nothing reads: a free page, bytes past the end),
	// exitDamaged (it must be found), or -1 (either: a flipped byte may sit in a page's
	// unused room or change a key without breaking its order).
	open int
	// mayLose reports whether events of the span starting at that page may
	// be lost; every other event must be salvaged.
	mayLose func(span int) bool
}

func TestDamage_AnyPageAnyKind_NoCommandPanics_RunRefuses_RecoverSavesEveryIntactEvent(t *testing.T) {
	for _, mode := range encryptionModes {
		t.Run(mode.name, func(t *testing.T) {
			fx := buildDamageFixture(t, mode)
			all := os.Getenv(damageAllEnv) == "1"
			cases := fx.cases(all)
			if mode.on && !all {
				// A sealed file is damaged the same ways; a third of the sample keeps make test
				// short (make test-damage runs them all).
				var some []damageCase
				for i, c := range cases {
					if i%3 == 0 {
						some = append(some, c)
					}
				}
				cases = some
			}
			t.Logf("fixture: %d bytes, %d pages of %d (%d in use or free), %d events, %d dead batches; %d cases (every page: %v)",
				len(fx.data), len(fx.kind), fx.pageSize, fx.hwm, len(fx.events), len(fx.dead), len(cases), all)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					fx.check(t, c)
				})
			}
		})
	}
}

// cases is every page (all) or a sample of pages (one of each kind, the
// root, and a few drawn with a fixed seed) × random bytes, zeros and one
// flipped byte (anywhere, in the page header, in the element table);
// truncations; and files of the wrong size.
func (fx *damageFixture) cases(all bool) []damageCase {
	seed := uint64(10)
	if v, err := strconv.ParseUint(os.Getenv(damageSeedEnv), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	pages := len(fx.kind)
	var ids []int
	if all {
		for id := range pages {
			ids = append(ids, id)
		}
	} else {
		ids = []int{0, 1, fx.root(), fx.firstOf("branch", ""), fx.firstOf("leaf", "events"), fx.firstOf("leaf", "dead"),
			fx.firstOf("overflow", ""), fx.firstOf("free", ""), fx.hwm - 1}
		for range 4 {
			ids = append(ids, 2+rng.IntN(fx.hwm-2))
		}
	}
	var out []damageCase
	seen := map[int]bool{}
	for _, id := range ids {
		if id < 0 || seen[id] {
			continue
		}
		seen[id] = true
		for _, kind := range []string{"random", "zeros", "flip", "flip_header", "flip_elements"} {
			data := bytes.Clone(fx.data)
			pg := data[id*fx.pageSize : (id+1)*fx.pageSize]
			flip := func(lo, hi int) { pg[lo+rng.IntN(hi-lo)] ^= byte(1 + rng.IntN(255)) }
			switch kind {
			case "random":
				for i := range pg {
					pg[i] = byte(rng.Uint32())
				}
			case "zeros":
				clear(pg)
			case "flip":
				flip(0, len(pg))
			case "flip_header": // page id, type, element count, overflow
				flip(0, 16)
			case "flip_elements": // the element table of a branch or leaf: where each key and value is
				if n := int(binary.LittleEndian.Uint16(pg[10:])); fx.spanOf[id] == id && n > 0 {
					flip(16, min(16+16*n, len(pg)))
				}
			}
			if bytes.Equal(data, fx.data) {
				continue // zeros over a page of zeros
			}
			c := damageCase{name: fmt.Sprintf("page_%d_%s_%s", id, fx.kind[id], kind), data: data, open: -1}
			whole := fx.kind[id] == "meta" || (fx.spanOf[id] == id && (fx.kind[id] == "branch" || fx.kind[id] == "leaf"))
			switch {
			case fx.kind[id] == "free" || fx.kind[id] == "unused":
				c.open = 0
			case (kind == "random" || kind == "zeros") && whole:
				c.open = exitDamaged
			}
			span := fx.spanOf[id]
			c.mayLose = func(s int) bool { return span >= 0 && s == span }
			out = append(out, c)
		}
	}
	cuts := []int{0, fx.pageSize, 2*fx.pageSize + fx.pageSize/2, fx.hwm / 2 * fx.pageSize, (fx.hwm - 1) * fx.pageSize, fx.hwm * fx.pageSize}
	if all {
		cuts = cuts[:0]
		for id := range pages {
			cuts = append(cuts, id*fx.pageSize, id*fx.pageSize+fx.pageSize/3)
		}
	}
	for _, cut := range cuts {
		if cut >= len(fx.data) {
			continue
		}
		c := damageCase{name: fmt.Sprintf("truncated_to_%d_bytes", cut), data: bytes.Clone(fx.data[:cut]), open: exitDamaged}
		first := cut / fx.pageSize // the first page not whole
		c.mayLose = func(s int) bool { return fx.spanEnd[s] >= first }
		if cut == 0 || cut >= fx.hwm*fx.pageSize {
			c.open = 0 // an empty file is a new queue; past the last page nothing is missing
		}
		out = append(out, c)
	}
	junk := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	lose := func(int) bool { return true }
	keep := func(int) bool { return false }
	out = append(out,
		damageCase{name: "wrong_size_1000_bytes_appended", data: append(bytes.Clone(fx.data), junk(1000)...), open: 0, mayLose: keep},
		damageCase{name: "wrong_size_100_random_bytes", data: junk(100), open: exitDamaged, mayLose: lose},
		damageCase{name: "wrong_size_3_pages_of_zeros", data: make([]byte, 3*fx.pageSize), open: exitDamaged, mayLose: lose},
	)
	return out
}

// root is the root page of the newest meta page.
func (fx *damageFixture) root() int {
	le := binary.LittleEndian
	off := 0
	if le.Uint64(fx.data[fx.pageSize+64:]) > le.Uint64(fx.data[64:]) {
		off = fx.pageSize
	}
	return int(le.Uint64(fx.data[off+32:]))
}

var savedRE = regexp.MustCompile(`saved (\d+) queued event\(s\) and (\d+) dead-letter batch\(es\)`)

// check runs the commands on the damaged file, each on the same bytes.
func (fx *damageFixture) check(t *testing.T, c damageCase) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.FileName)
	put := func() {
		if err := os.WriteFile(path, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := maps.Clone(quickExit)
	maps.Copy(env, fx.env)
	cli := func(args ...string) (int, string) {
		code, out, stderr := runCLI(t, t.TempDir(), env, "", args...)
		noPanic(t, args, code, stderr)
		return code, out + stderr
	}
	refusedRight := func(what string, code int, msg string) {
		if code != exitDamaged || !strings.Contains(msg, path) || !strings.Contains(msg, "outbox recover") {
			t.Errorf("%s on a refused file: exit %d, want %d naming %s and `outbox recover`:\n%s", what, code, exitDamaged, path, msg)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, c.data) {
			t.Errorf("%s changed the file it refused", what)
		}
	}

	put()
	code, msg := cli("inspect", "--data-dir", dir)
	if (code != 0 && code != exitDamaged) || (c.open >= 0 && code != c.open) {
		t.Fatalf("inspect: exit %d, want %d (-1: 0 or %d):\n%s", code, c.open, exitDamaged, msg)
	}
	refused := code == exitDamaged
	for _, args := range [][]string{{"dead", "list", "--data-dir", dir}, {"compact", "--data-dir", dir}} {
		put()
		got, msg := cli(args...)
		if refused {
			refusedRight(args[0], got, msg)
		} else if got != 0 {
			t.Errorf("%v: exit %d where inspect opened the file:\n%s", args, got, msg)
		}
	}
	put()
	if refused {
		// The bound only tells a refusal from a hang (an agent that served the file would
		// run on); how fast open refuses is the bench's to measure.
		p := start(t, t.TempDir(), agentEnv(dir, testutil.FreeAddr(t), "http://127.0.0.1:9/v1/batch", env), "run")
		got, _ := p.wait(t, 10*time.Second)
		noPanic(t, []string{"run"}, got, p.stderr.String())
		refusedRight("run", got, p.stderr.String())
	}

	code, msg = cli("recover", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("recover: exit %d, want 0:\n%s", code, msg)
	}
	if !refused {
		if !strings.Contains(msg, "passed the full check") {
			t.Fatalf("recover on a file the commands open: want it left alone:\n%s", msg)
		}
	} else {
		m := savedRE.FindStringSubmatch(msg)
		moved, _ := filepath.Glob(path + ".corrupt-*")
		if m == nil || len(moved) != 1 {
			t.Fatalf("recover: no report of what it saved, or the old file not moved aside (%v):\n%s", moved, msg)
		}
		if b, _ := os.ReadFile(moved[0]); !bytes.Equal(b, c.data) {
			t.Errorf("the file moved aside is not the damaged file as it was")
		}
		events, dead := fx.salvaged(t, dir)
		if n, _ := strconv.Atoi(m[1]); n != len(events) {
			t.Errorf("recover reported %d events saved; the fresh file holds %d", n, len(events))
		}
		if n, _ := strconv.Atoi(m[2]); n != len(dead) {
			t.Errorf("recover reported %d dead batches saved; the fresh file holds %d", n, len(dead))
		}
		for e := range events {
			if !fx.enqueued[e] {
				t.Fatalf("the fresh file holds an event never enqueued: %q", e)
			}
		}
		fx.intactSaved(t, c, events, dead, msg)
		return
	}
	events, dead := fx.salvaged(t, dir)
	fx.intactSaved(t, c, events, dead, msg)
}

// intactSaved checks that every event and dead batch on an undamaged page is there.
func (fx *damageFixture) intactSaved(t *testing.T, c damageCase, events, dead map[string]bool, report string) {
	t.Helper()
	missing := 0
	for e, span := range fx.events {
		if !events[e] && !c.mayLose(span) {
			missing++
		}
	}
	for id, span := range fx.dead {
		if !dead[id] && !c.mayLose(span) {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d events or dead batches on undamaged pages were not saved (%d events, %d dead batches are); recover said:\n%s",
			missing, len(events), len(dead), report)
	}
}

// noPanic fails when a command died of a Go panic or a fatal runtime error.
func noPanic(t *testing.T, args []string, code int, stderr string) {
	t.Helper()
	if code == 2 || strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error") {
		t.Errorf("outbox %v: exit %d; it must never die of a panic:\n%s", args, code, stderr)
	}
}
