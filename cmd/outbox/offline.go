package main

import (
	"fmt"
	"os"

	"github.com/outboxhq/outbox/pkg/config"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/spf13/cobra"
)

// checkDataDir makes sure an offline command is pointed at an existing data directory, so that a
// typo does not silently create an empty one.
func checkDataDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory %s does not exist (%w); pass the agent's --data-dir", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory; pass the agent's --data-dir", dir)
	}
	if _, err := os.Stat(dir + "/" + store.FileName); err != nil {
		return fmt.Errorf("data directory %s holds no queue file (%s); pass the agent's --data-dir", dir, store.FileName)
	}
	return nil
}

// stoppedDataDir loads the configuration and returns the data directory of a stopped agent,
// checked to hold a queue file, and the keys of queue.encryption.key_files, for the
// maintenance commands that work on the file itself.
func stoppedDataDir(a *app, cmd *cobra.Command) (string, *keyring.Keyring, error) {
	lc, err := a.load(cmd)
	if err != nil {
		return "", nil, err
	}
	keys, err := keyring.Load(lc.Config.Queue.Encryption.KeyFiles)
	if err != nil {
		return "", nil, usageErrorf("configuration: %w", err)
	}
	return lc.Config.DataDir, keys, checkDataDir(lc.Config.DataDir)
}

// openOffline opens the data directory of a stopped agent. A running agent holds the directory
// lock, so this fails at once with the store's "in use" message.
func openOffline(c *config.Config) (*uploader.Offline, error) {
	if err := checkDataDir(c.DataDir); err != nil {
		return nil, err
	}
	d, err := uploader.OpenOffline(c.UploaderConfig())
	if err != nil {
		return nil, storeError(err)
	}
	return d, nil
}
