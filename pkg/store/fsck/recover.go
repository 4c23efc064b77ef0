package fsck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	bolt "go.etcd.io/bbolt"
)

// Recover: the directory lock, the full check (a healthy file is left alone), salvage into
// <name>.recover, the old file set aside under a name never taken, and the fresh file
// renamed into place. The old bytes are never modified or deleted.

// Report is what Recover did. Unreadable, BadRecords and BadPages count what
// could be seen to be lost; MissingBytes and StoredEvents − Saved show loss
// that cannot be counted record by record (a truncated file, a lost page).
type Report struct {
	Saved      int    // queued events copied into the fresh file
	DeadSaved  int    // dead-letter batches copied
	Unreadable int    // BadRecords + BadPages
	MovedTo    string // where the old file now lives (inside the data directory); empty when nothing was moved

	// Healthy is true when the file opened and passed the full check
	// (the file's structure and every record's checksum). Without
	// RecoverOptions.Force, Recover then changes nothing: MovedTo is empty
	// and Saved is 0, and StoredEvents/StoredDeadBatches are what the file
	// holds.
	Healthy bool
	// BadRecords counts records that were found but fail their checksum, are
	// malformed dead batches, or whose element is damaged (a key of the
	// wrong length, a bucket flag in a bucket of records): each was one
	// event or one dead batch.
	BadRecords int
	// BadPages counts pages the file's tree points at that could not be read
	// (beyond the end of the file, not naming themselves, malformed). Each
	// may have held many events; how many is not known.
	BadPages int
	// MissingBytes is how much shorter the file is than its meta page says it
	// must be (high-water page id × page size − file size): the file was
	// truncated and whatever those bytes held is lost. 0 when the file is
	// whole, or when no meta page was readable (Scanned).
	MissingBytes int64
	// StoredEvents and StoredDeadBatches are the file's own counters as of
	// its last commit, or -1 when that record could not be read. When Saved
	// is smaller, at least StoredEvents − Saved events were lost.
	StoredEvents, StoredDeadBatches int64
	// Scanned is true when neither meta page was readable, so the file's
	// tree could not be followed: records were found by reading every page
	// as a leaf (at the page size PageSize that yields the most). Events that
	// were already acknowledged but still sat on freed pages may come back
	// (at-least-once; collectors dedupe on messageId), and neither
	// truncation nor lost pages can be measured.
	Scanned bool
	// PageSize is the page size the old file was read with (0 when nothing
	// in it could be read).
	PageSize int
}

// RecoverOptions change what Recover does.
type RecoverOptions struct {
	// Force salvages even a file that passes the full check (moving it
	// aside and copying it). Without it, a healthy file is left as is.
	Force bool
	// Now is the clock for the set-aside name; time.Now when nil.
	Now func() time.Time
	// Keys open the sealed records (queue.encryption.key_files). A file holding records sealed
	// with a key it lacks is not touched: RecoverWith returns a *keyring.MissingError.
	// Salvaged records keep their bytes, so sealed ones stay sealed and plain ones plain.
	Keys *keyring.Keyring
}

// Recover is RecoverWith(dir, RecoverOptions{}).
func Recover(dir string) (Report, error) {
	return RecoverWith(dir, RecoverOptions{})
}

// RecoverWith repairs dir's data file. It takes the directory lock
// (errs.ErrLocked while an agent runs). A file that opens and passes the full
// check is left untouched (Report.Healthy) unless opt.Force. Otherwise it
// reads the old file page by page without trusting it (out-of-range,
// misnamed or malformed pages are skipped and counted; with both meta pages
// lost, every page is scanned), copies every readable record, with its
// original key (so order), into a fresh file and recomputes the counters.
// Only when that file is complete and synced does the old one get its new
// name, <name>.corrupt-<UTC time to the microsecond>[-n]: a hard link (or a
// rename where links are not supported) that never replaces an existing
// file, so no earlier .corrupt file is ever overwritten. Then the fresh file
// is renamed over <name>. The old bytes are never modified or deleted.
func RecoverWith(dir string, opt RecoverOptions) (Report, error) {
	rep := Report{StoredEvents: -1, StoredDeadBatches: -1}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	lock, err := datadir.Lock(dir)
	if err != nil {
		return rep, err
	}
	defer func() { _ = lock.Unlock() }()
	if _, err := datadir.Check(dir); err != nil {
		return rep, err
	}
	path := filepath.Join(dir, datadir.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("recover: read %s: %w", path, err)
	}
	if len(data) == 0 {
		// What bbolt makes a new queue from (Open treats it so): nothing to salvage.
		rep.Healthy, rep.StoredEvents, rep.StoredDeadBatches = true, 0, 0
		return rep, nil
	}
	if res, ok := checkHealthy(path, data, opt.Keys); ok {
		rep.Healthy = true
		if !opt.Force {
			rep.StoredEvents, rep.StoredDeadBatches = res.Actual.Events, res.Actual.DeadBatches
			return rep, nil
		}
	}
	sal, err := safeSalvage(data, format.NewCodec(opt.Keys))
	if err != nil {
		return rep, fmt.Errorf("recover: read %s: %w; nothing was changed", path, err)
	}
	if len(sal.missing) > 0 {
		me := &keyring.MissingError{Path: path, Plain: opt.Keys.Len() == 0}
		for id := range sal.missing {
			me.IDs = append(me.IDs, id)
		}
		slices.SortFunc(me.IDs, func(a, b keyring.ID) int { return bytes.Compare(a[:], b[:]) })
		return rep, me
	}
	sal.report(&rep, int64(len(data)))
	tmp := path + ".recover"
	_ = os.Remove(tmp) // ours: left by a recover that crashed before its rename
	db, err := format.OpenDB(tmp, false, 0)
	if err != nil {
		return rep, fmt.Errorf("recover: create the fresh file %s: %w; nothing was changed", tmp, err)
	}
	err = writeSalvage(db, sal, &rep)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return rep, fmt.Errorf("%w; nothing was changed", err)
	}
	if rep.MovedTo, err = setAside(path, opt.Now()); err != nil {
		_ = os.Remove(tmp)
		return rep, fmt.Errorf("recover: move aside: %w; nothing was changed", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return rep, fmt.Errorf("recover: put the fresh file %s in place: %w", tmp, err)
	}
	if err := datadir.SyncDir(dir); err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	return rep, nil
}

// setAside gives path the name <path>.corrupt-<UTC time>, adding -1, -2, …
// when that is taken. It never replaces a file: a hard link fails when the
// name exists; where links are not supported it renames after checking
// that the name is free (the directory lock keeps other outbox processes
// out meanwhile). With a link, path still names the old file until the
// caller renames the fresh one over it.
func setAside(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405.000000Z")
	for i := 0; i < 1000; i++ {
		target := base
		if i > 0 {
			target = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Link(path, target)
		if err == nil {
			return target, nil
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if _, serr := os.Lstat(target); serr == nil {
			continue
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return "", serr
		}
		if err := os.Rename(path, target); err != nil {
			return "", err
		}
		return target, nil
	}
	return "", fmt.Errorf("every name %s-n is taken", base)
}

// checkHealthy reports whether the file at path (whose bytes are data)
// passes the full check: the structure check of validateData first (so a
// file with a damaged meta page is not healthy: bbolt would silently fall
// back to the previous commit, losing the newest; and a damaged file is never
// handed to bbolt), then every record's checksum, read with bbolt read-only.
func checkHealthy(path string, data []byte, kr *keyring.Keyring) (res CheckResult, ok bool) {
	if validateData(data) != nil {
		return res, false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		return res, false
	}
	defer func() { _ = db.Close() }()
	res, err = CheckRecords(db, kr, true, nil)
	return res, err == nil
}
