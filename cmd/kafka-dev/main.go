package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// agentStopWait bounds how long kafka-dev waits for the agent after passing it SIGTERM:
// the agent's own shutdown.timeout (25 s by default) plus a margin.
const agentStopWait = 30 * time.Second

// consumeGrace is how long the consumer keeps printing after the agent stopped.
const consumeGrace = 500 * time.Millisecond

type options struct {
	brokers int
	topic   string
	agent   string // path of the outbox binary; "" runs no agent
	listen  string
	dataDir string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kafka-dev:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kafka-dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.brokers, "brokers", 3, "brokers in the local cluster")
	fs.StringVar(&o.topic, "topic", "events", "topic to create and consume")
	fs.StringVar(&o.agent, "agent", "", "outbox binary to run as an agent delivering to the cluster (e.g. bin/outbox); empty: no agent")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8089", "ingest.listen of the agent")
	fs.StringVar(&o.dataDir, "data-dir", "./outbox-data/kafka", "data_dir of the agent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.brokers < 1 {
		return errors.New("-brokers must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cluster, err := kfake.NewCluster(kfake.NumBrokers(o.brokers), kfake.SeedTopics(3, o.topic))
	if err != nil {
		return fmt.Errorf("start the local cluster: %w", err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	fmt.Fprintf(stdout, "kafka-dev: %d-broker cluster on %s, topic %q (in memory, gone at exit)\n", o.brokers, brokers, o.topic)

	// The consumer outlives the signal: it prints what the agent flushes on its way out.
	consumeCtx, stopConsuming := context.WithCancel(context.Background())
	consumed := make(chan error, 1)
	go func() { consumed <- consume(consumeCtx, cluster.ListenAddrs(), o.topic, stdout) }()
	defer func() {
		time.Sleep(consumeGrace)
		stopConsuming()
		<-consumed
	}()

	env := map[string]string{
		"OUTBOX_UPLOAD_DESTINATION":   "kafka",
		"OUTBOX_UPLOAD_KAFKA_BROKERS": brokers,
		"OUTBOX_UPLOAD_KAFKA_TOPIC":   o.topic,
		"OUTBOX_INGEST_LISTEN":        o.listen,
		"OUTBOX_DATA_DIR":             o.dataDir,
		"OUTBOX_BATCH_INTERVAL":       "1s", // see events arrive quickly
	}
	if o.agent == "" {
		fmt.Fprintln(stdout, "kafka-dev: no -agent; run one against the cluster with:")
		for _, k := range sortedKeys(env) {
			fmt.Fprintf(stdout, "  export %s=%s\n", k, env[k])
		}
		fmt.Fprintln(stdout, "  outbox run")
		<-ctx.Done()
		return nil
	}
	agent, err := startAgent(o.agent, env, stdout, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kafka-dev: agent %s listening on %s; send it an event:\n", o.agent, o.listen)
	fmt.Fprintf(stdout, "  curl -d '{\"type\":\"track\",\"event\":\"Hello\",\"userId\":\"u1\"}' http://%s/v1/track\n", o.listen)
	fmt.Fprintln(stdout, "kafka-dev: Ctrl-C stops the agent (flushing what it holds), then the cluster")

	exited := make(chan error, 1)
	go func() { exited <- agent.Wait() }()
	select {
	case err := <-exited:
		return fmt.Errorf("the agent exited: %v", err)
	case <-ctx.Done():
	}
	// The cluster stays up while the agent flushes into it.
	_ = agent.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			fmt.Fprintf(stdout, "kafka-dev: the agent exited: %v\n", err)
		}
	case <-time.After(agentStopWait):
		_ = agent.Process.Kill()
		<-exited
		fmt.Fprintf(stdout, "kafka-dev: the agent did not stop within %s; killed\n", agentStopWait)
	}
	return nil
}

// startAgent runs `outbox run` with env added to this process's environment (a variable
// already set wins, so OUTBOX_* settings of the caller are kept).
func startAgent(bin string, env map[string]string, stdout, stderr io.Writer) (*exec.Cmd, error) {
	cmd := exec.Command(bin, "run")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group: a Ctrl-C reaches kafka-dev alone, which passes one SIGTERM on (a
	// second signal would make the agent skip its last upload pass).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = os.Environ()
	for _, k := range sortedKeys(env) {
		if _, set := os.LookupEnv(k); !set {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the agent %s: %w (build it with 'make build')", bin, err)
	}
	return cmd, nil
}

// consume prints every record of topic as it arrives, until ctx ends.
func consume(ctx context.Context, brokers []string, topic string, out io.Writer) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("start the consumer: %w", err)
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				fmt.Fprintf(out, "kafka-dev: fetch %s/%d: %v\n", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			fmt.Fprintf(out, "kafka-dev: record %s/%d@%d key=%s %s\n", r.Topic, r.Partition, r.Offset, r.Key, clip(r.Value, 300))
		})
	}
	return nil
}

// clip shortens b to n bytes for printing.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
