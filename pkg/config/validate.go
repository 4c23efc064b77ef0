package config

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
)

// validate is the one validation path of the configuration. Load calls it for every
// command, so `outbox config` rejects exactly what `outbox run` would, and a reload checks the
// configuration it would apply with it. The rules are the
// packages' own (uploader.Config.Validate, agent.Config.Validate, on exactly the configurations
// run hands them); each problem comes back as an *errs.KeyError naming its key (and, for a rule
// between keys, the others), to which validate adds the source of every value. Two rules belong
// to the binary: data_dir may not be set empty, and debug.pprof_listen must be loopback.
func (lc *Loaded) validate() error {
	c := &lc.Config
	if c.DataDir == "" {
		return keyError("data_dir", lc.Sources["data_dir"], errors.New(
			`must not be empty; name a directory (default ./outbox-data), or remove the setting`))
	}
	if err := checkPprofListen(c.Debug.PprofListen); err != nil {
		return keyError("debug.pprof_listen", lc.Sources["debug.pprof_listen"], err)
	}
	var problems []error
	for _, err := range []error{c.UploaderConfig().Validate(), c.AgentConfig(nil).Validate(), c.validateDestination()} {
		if err == nil {
			continue
		}
		kes := errs.KeyErrors(err)
		if len(kes) == 0 {
			problems = append(problems, fmt.Errorf("configuration: %w", err))
		}
		for _, ke := range kes {
			problems = append(problems, lc.keysError(ke, append([]string{ke.Key}, ke.Related...)...))
		}
	}
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	return errors.Join(problems...)
}

// keysError is the shape of an error about a rule between keys: every key with its source.
func (lc *Loaded) keysError(err error, keys ...string) error {
	if len(keys) == 1 {
		return keyError(keys[0], lc.Sources[keys[0]], err)
	}
	named := make([]string, len(keys))
	for i, k := range keys {
		named[i] = fmt.Sprintf("%s (from %s)", k, lc.Sources[k])
	}
	return fmt.Errorf("configuration keys %s: %w", strings.Join(named, " and "), err)
}

// checkPprofListen refuses a debug.pprof_listen that is not a loopback host:port ("" is off).
func checkPprofListen(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:6060)", addr)
	}
	if !isLoopback(host) {
		return fmt.Errorf("%q is not a loopback address; profiles expose the process's memory, so serve them on "+
			"127.0.0.1 (e.g. 127.0.0.1:6060) and reach them over ssh -L if needed, or leave it empty to turn profiling off", addr)
	}
	return nil
}

// isLoopback reports whether host ("" meaning every interface) only listens on loopback.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
