package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the module's root directory.
const repoRoot = "../.."

// envName is the shape of an environment variable brainwire reads.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// envRead is a variable the code reads: a name, or a pattern with * where
// the name is made at run time ("OTEL_" + signal + "_EXPORTER").
type envRead struct {
	name  string
	where string // file:line
}

func (r envRead) matches(name string) bool {
	if !strings.Contains(r.name, "*") {
		return r.name == name
	}
	ok, _ := filepath.Match(r.name, name)
	return ok
}

// TestEveryVariableIsDocumented: every environment variable the module's
// code reads (a call of a function whose name says env, getenv, envOr,
// os.LookupEnv, ..., on a constant name) is documented in README.md or
// docs/, and every BRAINWIRE_ variable they document is read. A name the code
// builds from something other than constants is not seen.
func TestEveryVariableIsDocumented(t *testing.T) {
	reads := envReads(t)
	if len(reads) < 40 {
		t.Fatalf("found only %d reads: the scan is broken", len(reads))
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var text []byte
	for _, name := range append([]string{filepath.Join(repoRoot, "README.md")}, docs...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, b...)
	}
	documented := documentedVariables(string(text))
	names := map[string]bool{}
	for _, r := range reads {
		names[r.name] = true
		if !slices.ContainsFunc(documented, r.matches) {
			t.Errorf("%s reads %s, which neither README.md nor docs/ documents", r.where, r.name)
		}
	}
	for _, d := range documented {
		if strings.HasPrefix(d, "BRAINWIRE_") && !slices.ContainsFunc(reads, func(r envRead) bool { return r.matches(d) }) {
			t.Errorf("the docs document %s, which no code reads", d)
		}
	}
	t.Logf("%d variables read", len(names))
}

// envReads scans the module's Go files, tests and nested modules aside.
func envReads(t *testing.T) []envRead {
	t.Helper()
	var reads []envRead
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != repoRoot && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != repoRoot {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		consts := map[string]string{}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := constString(vs.Values[i], nil); ok {
							consts[id.Name] = s
						}
					}
				}
			}
			return true
		})
		read := func(e ast.Expr) {
			s, ok := constString(e, consts)
			if ok && envName.MatchString(strings.ReplaceAll(s, "*", "X")) {
				rel, _ := filepath.Rel(repoRoot, path)
				reads = append(reads, envRead{name: s, where: rel + ":" + strconv.Itoa(fset.Position(e.Pos()).Line)})
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if isEnvCall(n) {
					for _, arg := range n.Args {
						read(arg)
					}
				}
			case *ast.RangeStmt:
				// for _, k := range []string{"A", "B"} { ... getenv(k) ... }
				if list, ok := n.X.(*ast.CompositeLit); ok && readsVar(n.Body, n.Value) {
					for _, e := range list.Elts {
						read(e)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reads
}

// isEnvCall reports whether call reads the environment: a function whose
// name says env (getenv, envOr, os.LookupEnv, ...).
func isEnvCall(call *ast.CallExpr) bool {
	return strings.Contains(strings.ToLower(funcName(call.Fun)), "env")
}

// readsVar reports whether body passes the variable v to an env call.
func readsVar(body ast.Node, v ast.Expr) bool {
	id, ok := v.(*ast.Ident)
	if !ok {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && isEnvCall(call) {
			for _, arg := range call.Args {
				if a, ok := arg.(*ast.Ident); ok && a.Name == id.Name {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

func funcName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// constString evaluates a string constant: a literal, a constant of the
// file, or a sum of them, with * for the parts that are not constant.
func constString(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	case *ast.BinaryExpr:
		if v.Op != token.ADD {
			return "", false
		}
		x, okx := constString(v.X, consts)
		y, oky := constString(v.Y, consts)
		if !okx && !oky {
			return "", false
		}
		if !okx {
			x = "*"
		}
		if !oky {
			y = "*"
		}
		return x + y, true
	}
	return "", false
}

// documentedVariables lists the variables README.md names in backquotes,
// the short forms of a row expanded: in "`OTEL_EXPORTER_OTLP_ENDPOINT`
// (`_TRACES_ENDPOINT`)", `_TRACES_ENDPOINT` stands for
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the last word of the name before it
// replaced.
func documentedVariables(readme string) []string {
	quoted := regexp.MustCompile("`([A-Z_][A-Z0-9_]*)`")
	var out []string
	for line := range strings.SplitSeq(readme, "\n") {
		base := ""
		for _, m := range quoted.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") && base != "" {
				name = base[:strings.LastIndex(base, "_")] + name
			} else {
				base = name
			}
			if envName.MatchString(name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// TestREADMECaptureExample runs the README's capture example as a script,
// as written but for the build (the binary the tests built stands for it)
// and a free port for 8000: the capture is classified, and the example
// stops the server it started, leaving the port free.
func TestREADMECaptureExample(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed (apt-get install curl): the README's example cannot run")
		}
		t.Skip("curl is not installed")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := shellBlockAfter(t, string(readme), "## A capture")
	const build = "go build -o brainwire ./cmd/brainwire"
	if !strings.Contains(snippet, build) || !strings.Contains(snippet, "127.0.0.1:8000") {
		t.Fatalf("the example no longer builds brainwire and serves on 127.0.0.1:8000:\n%s", snippet)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	script := strings.ReplaceAll(snippet, build, "cp "+brainwireBinary(t)+" brainwire")
	script = "set -e\n" + strings.ReplaceAll(script, "127.0.0.1:8000", addr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	// Whatever the script leaves running is stopped with it, after the
	// check that it left nothing.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "BRAINWIRE_ADDR="+addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A server the script left running holds the output open: stop
	// waiting for it.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if c, derr := net.Dial("tcp", addr); derr == nil {
		c.Close()
		t.Errorf("the example left the server listening on %s", addr)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Fatalf("the example failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{`data: {"type":"STEP_START","stepName":"Classifying"}`, `"type":"CLASSIFIED"`, `"bucket":"People"`, `data: {"type":"COMPLETE"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the example's output lacks %s:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
		}
	}
}

// shellBlockAfter returns the first ```sh block after heading.
func shellBlockAfter(t *testing.T, readme, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("no sh block after %q", heading)
	}
	return block
}
