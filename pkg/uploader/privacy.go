package uploader

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
)

// This file is the privacy settings of intake: the scrub rules (privacy.rules, keyed by
// privacy.hash_key_file) and the suppress list (privacy.suppress_file). The client holds them
// compiled (privacy); Enqueue applies them, and the agent, which parses its requests itself,
// takes them through IntakeOptions. They change on Reconfigure and ReloadSuppressList.

// PrivacyConfig is the privacy.* section.
type PrivacyConfig struct {
	// Rules scrub fields of every event before it is stored, each written path=action:
	// "context.ip=mask", "traits.email=hash", "properties.card=remove" (event.ScrubRule says
	// how a path is written). Empty: no scrubbing.
	Rules []string `mapstructure:"rules"`
	// HashKeyFile holds the key of the hash rules (and of the id hashes in Forget's audit log
	// line): the file's contents, surrounding whitespace trimmed, at least 16 bytes. Required
	// when a rule hashes. The key is a secret: it is never logged or printed.
	HashKeyFile string `mapstructure:"hash_key_file"`
	// SuppressFile lists the ids of users whose later events are dropped at intake (answered
	// as accepted, counted as dropped with reason "suppressed"), one per line; blank lines and
	// lines starting with # are ignored. It is read at Open and by ReloadSuppressList; Forget
	// with Suppress adds to it and Unsuppress removes from it. A file that does not exist yet
	// is an empty list. Empty: no suppress list (Forget cannot suppress).
	SuppressFile string `mapstructure:"suppress_file"`
}

// privacy is PrivacyConfig loaded: what intake applies. Read-only once built.
type privacy struct {
	cfg      PrivacyConfig
	scrub    *event.Scrub
	hashKey  []byte // nil when no hash key file is configured
	suppress *event.IDSet
}

// validate reports the problems of the privacy section, reading the hash key file.
func (p PrivacyConfig) validate() []error {
	_, err := p.load()
	var out []error
	for _, ke := range errs.KeyErrors(err) {
		out = append(out, ke)
	}
	return out
}

// load reads the hash key and the suppress list and compiles the rules. Every problem is an
// *errs.KeyError naming its key.
func (p PrivacyConfig) load() (*privacy, error) {
	var problems []error
	out := &privacy{cfg: p}
	var rules []event.ScrubRule
	var hashRule string
	for _, s := range p.Rules {
		r, err := event.ParseScrubRule(s)
		if err != nil {
			problems = append(problems, errs.KeyErrorf("privacy.rules", "privacy.rules: %v", err))
			continue
		}
		if r.Action == event.ScrubHash && hashRule == "" {
			hashRule = r.String()
		}
		rules = append(rules, r)
	}
	if p.HashKeyFile != "" {
		key, err := readHashKey(p.HashKeyFile)
		if err != nil {
			problems = append(problems, errs.KeyErrorf("privacy.hash_key_file", "privacy.hash_key_file: %v", err))
		}
		out.hashKey = key
	} else if hashRule != "" {
		problems = append(problems, &errs.KeyError{Key: "privacy.hash_key_file", Related: []string{"privacy.rules"},
			Err: fmt.Errorf("privacy.rules has the hash rule %s, which needs a key: set privacy.hash_key_file to a file of at least 16 random bytes (openssl rand -hex 32 > FILE)", hashRule)})
	}
	if len(problems) == 0 {
		scrub, err := event.NewScrub(rules, out.hashKey)
		if err != nil {
			problems = append(problems, errs.KeyErrorf("privacy.rules", "privacy.rules: %v", err))
		}
		out.scrub = scrub
	}
	if p.SuppressFile != "" {
		ids, err := readSuppressFile(p.SuppressFile)
		if err != nil {
			problems = append(problems, errs.KeyErrorf("privacy.suppress_file", "privacy.suppress_file: %v", err))
		}
		out.suppress = event.NewIDSet(ids...)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %w", errs.ErrInvalidConfig, errors.Join(problems...))
	}
	return out, nil
}

// readHashKey reads a hash key file: its contents with surrounding whitespace trimmed. The key
// itself never appears in an error.
func readHashKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the hash key: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < 16 {
		return nil, fmt.Errorf("%s holds %d bytes of key; it needs at least 16 (openssl rand -hex 32 > %s)", path, len(key), path)
	}
	return key, nil
}

// readSuppressFile returns the ids of a suppress list; a file that does not exist is empty.
func readSuppressFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the suppress list: %w", err)
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("suppress list %s: %w", path, err)
	}
	return ids, nil
}

// EditSuppressList adds ids to the suppress list in path (creating it, mode 0600) or, with
// remove, takes them out, and returns the ids it then holds. The file is replaced whole
// (written beside it, fsynced, renamed over it), so a reader never sees half of it. An id
// already listed (or, with remove, not listed) is left as it is; ids may not hold a line
// break. It is the file's one writer: a running client edits it through Forget and Unsuppress,
// a stopped agent's through `outbox forget --data-dir`.
func EditSuppressList(path string, ids []string, remove bool) ([]string, error) {
	for _, id := range ids {
		if id == "" || strings.ContainsAny(id, "\r\n") {
			return nil, errors.New("suppress list: an id is empty or holds a line break; an id is one non-empty line")
		}
	}
	cur, err := readSuppressFile(path)
	if err != nil {
		return nil, err
	}
	next := slices.Clone(cur)
	if remove {
		next = slices.DeleteFunc(next, func(id string) bool { return slices.Contains(ids, id) })
	} else {
		for _, id := range ids {
			if !slices.Contains(next, id) {
				next = append(next, id)
			}
		}
	}
	if slices.Equal(next, cur) {
		return next, nil
	}
	var buf bytes.Buffer
	buf.WriteString("# outbox suppress list: events of these user ids are dropped at intake, one id per line\n")
	for _, id := range next {
		buf.WriteString(id)
		buf.WriteByte('\n')
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("suppress list: %w", err)
	}
	return next, nil
}

// writeFileAtomic replaces path with data: a temporary file beside it, fsynced, renamed over
// it, and the directory fsynced.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // fails once renamed
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// IntakeOptions returns opt with the client's scrub rules and suppress list set (Scrub,
// Suppress), as they are at the call: for a caller that parses and normalises events itself
// (the agent's ingest, with event.ParseBatchSuppressed) before EnqueueNormalized, so that its
// events are scrubbed and suppressed as Enqueue's are. It counts the events it leaves out
// with CountSuppressed.
func (c *Client) IntakeOptions(opt event.Options) event.Options {
	p := c.priv.Load()
	opt.Scrub, opt.Suppress = p.scrub, p.suppress
	return opt
}

// CountSuppressed counts n events dropped at intake because their user is on the suppress
// list: in Stats().Queue.Dropped["suppressed"], Hooks.OnDrop and a warn log line (which names
// no user). Enqueue and EnqueueAsync count their own; the agent counts those of its requests.
func (c *Client) CountSuppressed(n int) {
	c.q.CountSuppressed(n)
}

// ReloadSuppressList reads privacy.suppress_file again: the agent does on SIGHUP, so that a
// list edited by hand takes effect. A file that cannot be read changes nothing and its error
// is returned.
func (c *Client) ReloadSuppressList() error {
	c.privMu.Lock()
	defer c.privMu.Unlock()
	p := c.priv.Load()
	if p.cfg.SuppressFile == "" {
		return nil
	}
	ids, err := readSuppressFile(p.cfg.SuppressFile)
	if err != nil {
		return fmt.Errorf("privacy.suppress_file: %w", err)
	}
	c.setSuppressed(p, ids)
	return nil
}

// setSuppressed publishes p with the suppress list ids. privMu is held.
func (c *Client) setSuppressed(p *privacy, ids []string) {
	next := *p
	next.suppress = event.NewIDSet(ids...)
	c.priv.Store(&next)
	c.log.Info("suppress list loaded", "path", p.cfg.SuppressFile, "ids", next.suppress.Len())
}

// Unsuppress takes ids off the suppress list (privacy.suppress_file): their later events are
// accepted again. Ids not on the list are ignored. It fails when no suppress file is
// configured.
func (c *Client) Unsuppress(ids ...string) error {
	c.privMu.Lock()
	defer c.privMu.Unlock()
	p := c.priv.Load()
	if p.cfg.SuppressFile == "" {
		return ErrNoSuppressFile
	}
	list, err := EditSuppressList(p.cfg.SuppressFile, ids, true)
	if err != nil {
		return err
	}
	c.setSuppressed(p, list)
	return nil
}

// suppress adds ids to the suppress list. privMu is held.
func (c *Client) suppressIDs(ids []string) error {
	p := c.priv.Load()
	if p.cfg.SuppressFile == "" {
		return ErrNoSuppressFile
	}
	list, err := EditSuppressList(p.cfg.SuppressFile, ids, false)
	if err != nil {
		return err
	}
	c.setSuppressed(p, list)
	return nil
}
