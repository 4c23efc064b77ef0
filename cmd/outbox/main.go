// Command outbox is the durable, batching analytics uploader: the agent (`outbox run`), its client
// commands, offline maintenance and a local test collector. See `outbox --help`.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	cmd := NewRootCommand(Deps{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()})
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "outbox:", err)
	}
	os.Exit(exitCode(err))
}
