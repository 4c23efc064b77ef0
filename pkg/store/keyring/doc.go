// Package keyring holds the keys that seal outbox's stored records at rest
// (queue.encryption.key_files): it reads key files, names each key by an id that is safe to
// print, and gives the AES-256-GCM instance of each. The first key seals, every key opens, so a
// new key is put first and the old ones stay until nothing is sealed with them any more (key
// rotation needs no stop). How a record is sealed (its layout, its additional data) is the
// store's format (pkg/store/internal/format); this package knows keys only.
//
// A key file holds exactly 32 random bytes (outbox keygen writes one with mode 0600). A key's
// id is the first 4 bytes of SHA-256 over a fixed label and the key, printed as 8 hex digits: it
// names the key in records, errors and logs without revealing anything of it. Key bytes never
// appear in an error, a log line or the output of any command.
package keyring
