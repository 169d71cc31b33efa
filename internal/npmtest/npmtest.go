// Package npmtest starts the real local servers the test suite needs
// (Cosmos DB and Blob Storage emulators from the npm registry) as child
// processes on free loopback ports.
//
// The packages are installed by `npm ci --prefix testenv` (.ci/run does it).
// When they are missing, tests skip locally but fail under CI, so a broken
// install can never turn into a silently green run.
package npmtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/syncbuf"
)

// Server is a running npm-provided server.
type Server struct {
	Addr string // host:port on loopback
	Port int
	Dir  string // its scratch directory
}

// Bin returns the path of an npm binary installed under testenv/, skipping
// the test (or failing it under CI) when it is not installed.
func Bin(t testing.TB, name string) string {
	t.Helper()
	return installed(t, name, filepath.Join(".bin", name), "")
}

// installed is the path of rel under testenv/node_modules, where check
// (rel itself when "") must exist, or skips or fails the test as missing
// says.
func installed(t testing.TB, name, rel, check string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("finding repository root: %v", err)
	}
	p := filepath.Join(root, "testenv", "node_modules", rel)
	if _, err := os.Stat(filepath.Join(p, check)); err != nil {
		missing(t, fmt.Sprintf("%s not installed (run: npm ci --prefix testenv): %v", name, err))
	}
	return p
}

// Node returns the path of the node binary, skipping the test (or failing
// it under CI) when Node.js is not installed.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, fmt.Sprintf("node not installed: %v", err))
	}
	return node
}

// Package returns the directory of an npm package installed under
// testenv/ (such as "@ag-ui/client"), skipping the test (or failing it
// under CI) when it is not installed.
func Package(t testing.TB, name string) string {
	t.Helper()
	return installed(t, name, filepath.FromSlash(name), "package.json")
}

// missing skips the test, or fails it under CI, where a missing install
// must never turn into a silently green run.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Start runs the npm binary name with args, where the literal "{port}" and
// "{dir}" in args are replaced by a free port and a fresh scratch directory.
// It waits until the port accepts connections and stops the process when
// the test ends.
func Start(t testing.TB, name string, args ...string) *Server {
	t.Helper()
	bin := Bin(t, name)
	port, err := freePort()
	if err != nil {
		t.Fatalf("choosing a port for %s: %v", name, err)
	}
	dir := t.TempDir()
	expanded := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
		expanded[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, expanded...)
	cmd.Dir = dir
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before listening on %s:\n%s", name, addr, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 60s:\n%s", name, addr, out.String())
		}
	}
	return &Server{Addr: addr, Port: port, Dir: dir}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// repoRoot walks up from the working directory to the directory with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
