package test_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// Every ```go block of README.md is compiled here, in a module of its own that takes
// github.com/outboxhq/outbox from this repository (a replace directive), as a reader's module
// would take it from the proxy. A block that starts with "package" is a whole program, built
// and vetted as it is. Any other block is a fragment going on from the library example: it
// becomes the body of a function that returns an error, with ctx, cfg, client, events and
// logger declared around it, its imports found from the package names it uses, and its
// variables marked used; a fragment that calls an API that does not exist, or calls one
// wrongly, fails the build. The whole program is then run against a local collector.

// readmeImports maps the package names README blocks use to their import paths.
var readmeImports = map[string]string{
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"http":      "net/http",
	"json":      "encoding/json",
	"log":       "log",
	"os":        "os",
	"slog":      "log/slog",
	"time":      "time",
	"errs":      "github.com/outboxhq/outbox/pkg/errs",
	"kafka":     "github.com/outboxhq/outbox/pkg/kafka",
	"uploader":  "github.com/outboxhq/outbox/pkg/uploader",
	"analytics": analyticsGoModule,
}

// analyticsGoModule and analyticsGoVersion are the Segment Go SDK the README's SDK block is
// written for, pinned so that a new release cannot change what the test checks.
const (
	analyticsGoModule  = "github.com/segmentio/analytics-go/v3"
	analyticsGoVersion = "v3.3.0"
)

// fragmentPrelude declares what the README's fragments take from the library example.
const fragmentPrelude = `var (
	ctx    = context.Background()
	cfg    = uploader.DefaultConfig()
	client *uploader.Client
	events []any
	logger = slog.Default()
)
`

// fragmentFile wraps a fragment into a Go file of package pkg.
func fragmentFile(pkg, src string) (string, error) {
	used := map[string]bool{"context": true, "uploader": true, "slog": true}
	for _, m := range regexp.MustCompile(`\b([a-z]+)\.[A-Za-z_]`).FindAllStringSubmatch(src, -1) {
		if _, ok := readmeImports[m[1]]; ok {
			used[m[1]] = true
		}
	}
	var imports []string
	for name := range used {
		imports = append(imports, fmt.Sprintf("\t%q", readmeImports[name]))
	}
	sort.Strings(imports)
	head := "package " + pkg + "\n\nimport (\n" + strings.Join(imports, "\n") + "\n)\n\n" + fragmentPrelude + "\nfunc block() error {\n"
	file := head + src + "\n\treturn nil\n}\n"

	// Mark every variable the fragment declares at its top level as used: a README fragment
	// shows a result (list, n, head) without always using it.
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", file, 0)
	if err != nil {
		return "", fmt.Errorf("the fragment does not parse: %w\n%s", err, file)
	}
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "block" {
			continue
		}
		for _, st := range fn.Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, l := range st.Lhs {
						if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, sp := range gd.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							names = append(names, id.Name)
						}
					}
				}
			}
		}
	}
	var blanks strings.Builder
	for _, n := range names {
		blanks.WriteString("\t_ = " + n + "\n")
	}
	return head + src + "\n" + blanks.String() + "\treturn nil\n}\n", nil
}

// readmeModule writes a module in a temporary directory with one package per block and
// returns its directory and the packages, by block number (1-based).
func readmeModule(t *testing.T, blocks []string) (string, map[int]string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readmecheck\n\ngo 1.26.0\n\nrequire github.com/outboxhq/outbox v0.0.0\n\nreplace github.com/outboxhq/outbox => " + root + "\n"
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	pkgs := map[int]string{}
	for i, b := range blocks {
		n := i + 1
		pkg := fmt.Sprintf("block%d", n)
		pkgs[n] = "./" + pkg
		if strings.HasPrefix(strings.TrimSpace(b), "package ") {
			write(filepath.Join(pkg, "main.go"), b+"\n")
			continue
		}
		src, err := fragmentFile(pkg, b)
		if err != nil {
			t.Fatalf("README go block %d: %v", n, err)
		}
		write(filepath.Join(pkg, "block.go"), src)
	}
	return dir, pkgs
}

// goCmd runs the go command in dir; proxy says whether the module proxy may be asked (only for
// a third-party SDK; this repository's modules are in the module cache once it has built).
func goCmd(t *testing.T, dir string, proxy bool, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if !proxy {
		cmd.Env = append(cmd.Env, "GOPROXY=off")
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestReadme_EveryGoBlockCompiles(t *testing.T) {
	blocks := readmeBlocks(t, "go")
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d go blocks; the test expects the library example and its fragments", len(blocks))
	}
	dir, pkgs := readmeModule(t, blocks)
	var own, sdk []string
	for n, b := range blocks {
		if strings.Contains(b, "analytics.") {
			sdk = append(sdk, pkgs[n+1])
		} else {
			own = append(own, pkgs[n+1])
		}
	}
	sort.Strings(own)
	if out, err := goCmd(t, dir, false, append([]string{"vet"}, own...)...); err != nil {
		t.Fatalf("README go blocks do not build (go vet %v): %v\n%s\n(the packages are the blocks in order: block1 is the first go block)", own, err, out)
	}
	if len(sdk) == 0 {
		return
	}
	t.Run("the Segment SDK block", func(t *testing.T) {
		if out, err := goCmd(t, dir, true, "get", analyticsGoModule+"@"+analyticsGoVersion); err != nil {
			testutil.MissingTool(t, fmt.Sprintf("%s@%s cannot be fetched through the module proxy (%v): its README block is not compiled\n%s", analyticsGoModule, analyticsGoVersion, err, out))
		}
		if out, err := goCmd(t, dir, false, append([]string{"vet"}, sdk...)...); err != nil {
			t.Fatalf("the README's analytics-go block does not build: %v\n%s", err, out)
		}
	})
}

// The README's library program runs as written, with `make run`'s collector address swapped
// for a collector of the test's own: it delivers its events and exits 0.
func TestReadme_LibraryProgramRuns(t *testing.T) {
	var program string
	for _, b := range readmeBlocks(t, "go") {
		if strings.HasPrefix(strings.TrimSpace(b), "package main") {
			program = b
		}
	}
	const devCollector = "http://127.0.0.1:8090"
	if !strings.Contains(program, devCollector) {
		t.Fatalf("README.md has no whole library program that uploads to %s", devCollector)
	}
	collector := sinktest.Start(t, sink.Options{})
	dir, _ := readmeModule(t, []string{strings.ReplaceAll(program, devCollector, collector.URL())})
	bin := filepath.Join(t.TempDir(), "app")
	if out, err := goCmd(t, dir, false, "build", "-o", bin, "./block1"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, bin)
	run.Dir, run.Env = work, environ(nil)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README program: %v\n%s", err, out)
	}
	if st := collector.Stats(); st.Events != 2 {
		t.Errorf("the collector received %d events, want the program's 2\n%s", st.Events, out)
	}
	if _, err := os.Stat(filepath.Join(work, "outbox-data")); err != nil {
		t.Errorf("the program's data directory: %v", err)
	}
}
