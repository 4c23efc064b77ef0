// Package fsck checks and repairs outbox's data file without trusting it: the reader of a bbolt
// file page by page that never panics on damage (pagewalk.go), the structure check the store's
// Open runs before bbolt may touch a file (validate.go), the check of every record's checksum
// (check.go), and recover, which salvages every readable record of a damaged file into a fresh
// one (salvage.go, recover.go; `outbox recover`). It never writes to the file it checks.
//
// pkg/store calls ValidateFile and CheckRecords when it opens a file; `outbox recover` calls
// RecoverWith on a stopped agent's directory, under the same directory lock. Both share the
// file's format (pkg/store/internal/format) and this package imports nothing of the running
// store.
//
// # Why a reader of our own
//
// No damage to the file may crash the process. bbolt cannot promise that: on
// a damaged page it panics, and two of its reads run in goroutines of its
// own, where no recover() can catch the panic: Tx.Check, and the freelist
// scan (DB.freepages) that every read-write open runs over the whole tree
// (the freelist is not stored, see format.OpenDB). So bbolt never reads a file
// this process did not write until the project's own reader has checked it
// (validate.go, on the pagewalk.go format): both meta pages intact, the
// file as long as they say, and every page of the tree naming itself, of the
// right type, inside the file, referenced once, every element inside its
// page, keys in order, the root holding exactly the events, dead and meta
// buckets. That is every invariant bbolt's scan and Check assert, so a file
// that passes cannot make them panic; Tx.Check itself is never run. The
// reader maps the file read-only, checks every bound, and does the work the
// freelist scan does anyway, so it costs about as much again at open.
//
// The other way, containing bbolt's check in a subprocess (a re-exec of the
// binary), was not taken: the library's Open runs inside someone else's
// program and cannot re-exec it; it adds a process start to every open; and
// a crashed checker says only that it crashed, where the reader names the
// page and what is wrong with it (and is the one recover already relies on).
//
// The file is walked once at open, not twice: commits do not store the
// freelist (that would cost a freelist write on every commit), but the store's Close
// writes it in one last empty commit. The reader checks a stored freelist
// against the tree it walks (every id inside the file, none twice, none in
// use), and bbolt then reads it instead of rebuilding it with a scan of its
// own. The first commit after open marks it as not stored again, so a file
// left by a crash or kill -9 has none, and bbolt rebuilds it by the scan, on
// a file the reader has just checked.
//
// Both meta pages must be intact: with one damaged, bbolt would fall back silently to the
// commit before, losing the newest. An empty file is a new one.
//
// # Records
//
// CheckRecords verifies every record's CRC and every dead batch's payload, through bbolt (in
// the caller's goroutine, on a file ValidateFile passed), and counts what the file holds, so
// that the store can correct counters found off. The structure check and CheckRecords together
// are the full check.
//
// # Recover
//
// Recover leaves a file that passes the full check (the same as Open's) alone
// (RecoverWith's Force rewrites it anyway). Otherwise it first writes every readable record into
// <name>.recover and syncs it, then gives the old file a name that is never
// taken already, <name>.corrupt-<UTC time to the µs>[-N] (a hard link, so an
// existing file is never overwritten), and renames the fresh file into place:
// a crash at any point leaves the original intact. It walks bbolt's pages
// itself so that broken pages are skipped; where the tree fails the structure
// check (a lost page, a damaged reference that leads elsewhere) it also reads
// every page the walk did not reach as a possible leaf; with both meta pages
// unreadable it scans every page so, at each common page size. A scan can
// bring back events already acknowledged (still on freed pages): duplicates,
// never a loss. The Report says what is known of what could not be saved.
package fsck
