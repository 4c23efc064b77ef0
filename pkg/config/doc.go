// Package config is the agent's configuration: the key table, loading from file, environment and
// flags (with viper for the YAML file), validation, the redacted display of `outbox config`, and
// what a reload may change in a running agent.
//
// # One table
//
// Every configuration key is one row of the key table (keys.go): its name, how its value is
// parsed (string, bool, whole number, size, duration, list, mapping, with an optional set of
// allowed values and a lower bound), its flag when it has one, whether its value is a secret,
// its one line of help, and whether a reload applies it live or why it needs a restart. A row
// points at the key's one field in Config, which holds the packages' own configurations
// (uploader.Config, agent.Config, kafka.Config) beside the few sections that belong to the
// binary (log, debug, the destination's kind). A key's default is that field's value in Default,
// which is built from the packages' own defaults: nothing is copied field by field, and there is
// no second list of keys to keep in step. `outbox config`, its help, config.example.yaml's test,
// the environment variable names and the reload are all read off the table.
//
// # Loading
//
// Load layers four sources, each beating the ones before: the defaults, the YAML file (--config,
// or ./outbox.yaml when it exists), OUTBOX_* environment variables (OUTBOX_ + the key in upper
// case with "." as "_"; an empty variable counts as unset) and the flags the command was given.
// It records where every value came from (Source), so that each error names the key and the
// source of the bad value: "configuration key batch.interval (from env OUTBOX_BATCH_INTERVAL):
// ...". An unknown key in the file is an error; an OUTBOX_* variable that names no key is only
// reported (UnknownEnv), with the nearest real name when one is close, because Kubernetes sets
// such variables for a Service named outbox.
//
// Load then validates the result through one path: the packages' own Validate methods on exactly
// the configurations the running agent hands them (UploaderConfig, AgentConfig, the chosen
// destination's), plus the binary's two rules (data_dir not empty, debug.pprof_listen on
// loopback). So `outbox config` refuses exactly what `outbox run` would, with the same message.
//
// # Secrets
//
// A key marked secret (write keys, tokens, passwords) never reaches the output: Print shows it
// as <redacted>, credentials embedded in upload.endpoint are hidden, and an upload.headers
// value whose name looks like a credential (Authorization, Cookie, *Key*, *Token*, *Secret*...)
// is redacted too. Error messages name keys and sources, never a secret's value. No secret has a
// flag: flags show in ps.
//
// # Reload
//
// A Reloader re-reads the configuration through Load, exactly as at start, and compares it with
// the one loaded before, key by key along the table. A changed key the table marks live goes to
// the running packages (uploader.Client.Reconfigure, agent.Agent.Reconfigure, the log level);
// every other changed key keeps its old value until a restart and is reported with the table's
// reason. The live values with the kept ones are validated together before anything changes; a
// configuration that does not load or validate changes nothing and the agent runs on. The
// outcome (applied, partial, rejected) goes to agent.Agent.RecordReload.
//
// Dependencies point one way: this package imports the packages whose configurations it holds
// (pkg/uploader, pkg/agent, pkg/kafka); cmd/outbox imports it; nothing below imports it.
package config
