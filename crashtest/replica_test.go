package crashtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/process"
)

// The brainwire binary the tests run, built once per test binary.
var (
	flagBinary = flag.String("crash.binary", "", "run this brainwire binary instead of building ./cmd/brainwire")
	buildOnce  sync.Once
	binPath    string
	buildErr   error
)

// brainwireBinary builds ./cmd/brainwire, once, unless -crash.binary names
// one.
func brainwireBinary(t *testing.T) string {
	t.Helper()
	if *flagBinary != "" {
		return *flagBinary
	}
	buildOnce.Do(func() {
		// The binary is built from the whole module, which go test does
		// not know this test depends on: looking at every source file
		// tells it, so that a cached result never stands for another build.
		_ = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "go.sum")) {
				_, _ = os.Stat(path)
			}
			if err == nil && d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
				return filepath.SkipDir
			}
			return nil
		})
		dir, err := os.MkdirTemp("", "brainwire-crash-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "brainwire")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/brainwire").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// replica is one `brainwire serve` process, started again at the same
// address after it is killed.
type replica struct {
	name string
	bin  string
	args []string
	env  []string
	addr string
	log  string // every run's output, appended

	mu      sync.Mutex
	p       *process.Proc // nil when not running
	stopped bool
}

// newReplica makes replica name listening on a free port with env over a
// clean environment, not yet started.
func newReplica(t *testing.T, name string, env map[string]string, args ...string) *replica {
	t.Helper()
	addr, err := process.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	full := []string{"BRAINWIRE_ADDR=" + addr}
	for _, kv := range os.Environ() {
		// Nothing of the machine's own configuration.
		if !slices.ContainsFunc([]string{"BRAINWIRE_", "AZURE_", "OTEL_", "COSMOS_", "ADK_", "OPENAI_", "APPLICATIONINSIGHTS_"},
			func(p string) bool { return strings.HasPrefix(kv, p) }) {
			full = append(full, kv)
		}
	}
	for k, v := range env {
		full = append(full, k+"="+v)
	}
	r := &replica{name: name, bin: brainwireBinary(t), args: args, env: full, addr: addr, log: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(r.kill)
	return r
}

func (r *replica) base() string { return "http://" + r.addr }

// start runs serve and waits until it listens.
func (r *replica) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.bin, append([]string{"serve"}, r.args...)...)
	cmd.Env = r.env
	p, err := process.Start(r.name, cmd, r.log)
	if err != nil {
		return err
	}
	r.p, r.stopped = p, false
	if err := p.WaitReady(context.Background(), 90*time.Second, process.Listening(r.addr)); err != nil {
		return fmt.Errorf("%w\n%s", err, r.tail())
	}
	return nil
}

// kill ends the process at once (SIGKILL): nothing of it runs after.
func (r *replica) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		r.p.Kill()
	}
	r.p, r.stopped = nil, false
}

// stop freezes the process (SIGSTOP): its connections stay open, and
// nothing answers on them until cont.
func (r *replica) stop() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil || r.stopped {
		return false
	}
	r.stopped = r.p.Signal(syscall.SIGSTOP) == nil
	return r.stopped
}

func (r *replica) cont() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil && r.stopped {
		_ = r.p.Signal(syscall.SIGCONT)
		r.stopped = false
	}
}

// up reports whether the process runs and is not stopped.
func (r *replica) up() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p != nil && !r.stopped
}

// tail is the end of the replica's output but its reasoning chunks (the
// log is their sink without telemetry), for failure messages.
func (r *replica) tail() string {
	b, _ := os.ReadFile(r.log)
	var keep [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.Contains(line, []byte(`msg="reasoning chunk"`)) {
			keep = append(keep, line)
		}
	}
	if len(keep) > 60 {
		keep = keep[len(keep)-60:]
	}
	return string(bytes.Join(keep, []byte("\n")))
}
