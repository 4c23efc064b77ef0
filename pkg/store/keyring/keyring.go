package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
)

// KeySize is the length of a key file: an AES-256 key.
const KeySize = 32

// IDSize is the length of a key id in a sealed record.
const IDSize = 4

// ID names a key without revealing it (see doc.go).
type ID [IDSize]byte

// String is the id as 8 hex digits, as errors and `outbox inspect` print it.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// idLabel separates the key id's hash from any other use of SHA-256 over the key.
const idLabel = "outbox queue key id v1\x00"

// IDOf returns the id of key.
func IDOf(key []byte) ID {
	h := sha256.New()
	h.Write([]byte(idLabel))
	h.Write(key)
	var id ID
	copy(id[:], h.Sum(nil))
	return id
}

// Key is one key: its id and its AES-256-GCM instance (safe for concurrent use).
type Key struct {
	ID   ID
	AEAD cipher.AEAD
}

// Keyring is the configured keys, the sealing one first. A nil *Keyring holds no key: records
// are stored in plaintext.
type Keyring struct {
	keys []Key
}

// New returns the keyring of keys (each KeySize bytes), the first sealing. It fails when a key
// has the wrong length or two keys are the same; it keeps no reference to the slices.
func New(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	kr := &Keyring{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("key %d is %d bytes; a key is exactly %d random bytes (outbox keygen writes one)", i+1, len(k), KeySize)
		}
		id := IDOf(k)
		if _, ok := kr.Find(id); ok {
			return nil, fmt.Errorf("key %d (id %s) is given twice", i+1, id)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("key %d (id %s): %w", i+1, id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %d (id %s): %w", i+1, id, err)
		}
		kr.keys = append(kr.keys, Key{ID: id, AEAD: aead})
	}
	return kr, nil
}

// Load reads the key files at paths (the first seals). Errors name the file, never its bytes.
func Load(paths []string) (*Keyring, error) {
	keys := make([][]byte, 0, len(paths))
	for _, p := range paths {
		k, err := readKeyFile(p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	kr, err := New(keys...)
	if err != nil {
		return nil, fmt.Errorf("queue.encryption.key_files: %w", err)
	}
	return kr, nil
}

func readKeyFile(path string) ([]byte, error) {
	path = strings.TrimSpace(path)
	if path == "" {
		return nil, errors.New("queue.encryption.key_files: an empty file name")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("key file %s does not exist; create one with `outbox keygen %s`", path, path)
		}
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	if len(b) != KeySize {
		return nil, fmt.Errorf("key file %s holds %d bytes; a key file holds exactly %d random bytes (outbox keygen writes one)", path, len(b), KeySize)
	}
	return b, nil
}

// Generate writes a new key of KeySize random bytes to path with mode 0600. It never replaces a
// file: it fails when path exists.
func Generate(path string) (ID, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return ID{}, fmt.Errorf("generate key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ID{}, fmt.Errorf("%s exists; a key file is never overwritten (a lost key loses what it sealed): choose another name", path)
		}
		return ID{}, fmt.Errorf("create key file: %w", err)
	}
	_, err = f.Write(key)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return ID{}, fmt.Errorf("write key file %s: %w", path, err)
	}
	return IDOf(key), nil
}

// Sealing returns the key that seals (the first), false for a nil keyring.
func (kr *Keyring) Sealing() (Key, bool) {
	if kr == nil || len(kr.keys) == 0 {
		return Key{}, false
	}
	return kr.keys[0], true
}

// Find returns the key whose id is id.
func (kr *Keyring) Find(id ID) (Key, bool) {
	if kr == nil {
		return Key{}, false
	}
	for _, k := range kr.keys {
		if k.ID == id {
			return k, true
		}
	}
	return Key{}, false
}

// IDs returns the ids of the keys, the sealing one first.
func (kr *Keyring) IDs() []ID {
	if kr == nil {
		return nil
	}
	out := make([]ID, len(kr.keys))
	for i, k := range kr.keys {
		out[i] = k.ID
	}
	return out
}

// Len is the number of keys (0 for nil).
func (kr *Keyring) Len() int {
	if kr == nil {
		return 0
	}
	return len(kr.keys)
}

// MissingError reports records sealed with keys the keyring does not hold (it wraps
// errs.ErrKeyMissing). It names the ids, never anything of a key.
type MissingError struct {
	Path string // the data file
	IDs  []ID   // the keys it needs and the keyring lacks
	// Plain is true when the keyring is empty: the file is encrypted and no key was given.
	Plain bool
}

// Error names the key ids and what to do.
func (e *MissingError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = id.String()
	}
	what := "add the key file(s) to queue.encryption.key_files (env OUTBOX_QUEUE_ENCRYPTION_KEY_FILES)"
	if e.Plain {
		what = "set queue.encryption.key_files (env OUTBOX_QUEUE_ENCRYPTION_KEY_FILES) to the key file(s); to store plain records again, run `outbox rekey --decrypt` with them"
	}
	return fmt.Sprintf("data file %s holds records sealed with key id %s, which is not configured; %s; nothing was changed",
		e.Path, strings.Join(ids, ", "), what)
}

// Unwrap returns errs.ErrKeyMissing.
func (e *MissingError) Unwrap() error { return errs.ErrKeyMissing }
