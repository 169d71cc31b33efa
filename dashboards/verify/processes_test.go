package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// buildBrainwire builds cmd/brainwire from this checkout into dir: the
// workload runs the binary a person runs, each replica and evaluation a
// process of its own.
func buildBrainwire(dir string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "brainwire")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/brainwire")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/brainwire: %v\n%s", err, out)
	}
	return bin, nil
}

// proc is one brainwire process.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // its standard error and output
	done chan struct{}
	err  error // its exit, once done is closed
}

// baseEnv is what every process gets besides its own settings: none of the
// test's OTEL_* or BRAINWIRE_* variables leak in.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCOVERDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// run starts `brainwire args...` with env.
func (s *stack) run(name string, env map[string]string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(s.dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(s.bin, args...)
	p.cmd.Env = baseEnv()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	dieWithTest(p.cmd)
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	s.stops = append(s.stops, func() { _ = p.stop() })
	return p, nil
}

// stop asks the process to end as an orchestrator does (SIGTERM: serve
// drains and flushes its telemetry) and waits for it.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return p.exit()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 20s after SIGTERM\n%s", p.name, p.tail())
	}
	return p.exit()
}

// wait waits for a process that ends by itself (an evaluation).
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.exit()
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s still running after %s\n%s", p.name, d, p.tail())
	}
}

func (p *proc) exit() error {
	var ee *exec.ExitError
	if p.err != nil && !(errors.As(p.err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()) {
		return fmt.Errorf("%s: %v\n%s", p.name, p.err, p.tail())
	}
	return nil
}

// tail is the end of the process's log, for messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitReady waits until ready says the process is (nil), for 30 seconds
// at most, or until it exits.
func waitReady(p *proc, what string, ready func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was %s: %v\n%s", p.name, what, p.err, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not %s after 30s (%v)\n%s", p.name, what, err, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealthy waits for a serve process to answer /health with 200.
func waitHealthy(p *proc, base string) error {
	return waitReady(p, "healthy", func() error {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	})
}

// waitListening waits for a process to accept connections on addr.
func waitListening(p *proc, addr string) error {
	return waitReady(p, "listening on "+addr, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// phoneEvents is what a phone read of one capture stream.
type phoneEvents struct {
	outcome    string // CLASSIFIED, LOW_CONFIDENCE, MISUNDERSTOOD, UNRESOLVED or ERROR
	itemID     string
	bucket     string
	confidence float64
	runID      string
	// replayed: the answer was the first capture's, replayed for a
	// repeat of its Idempotency-Key (Idempotent-Replayed: true).
	replayed bool
}

// post sends a capture (or follow-up) as the phone does, with an
// Idempotency-Key when key is not empty, and reads its stream to the end.
func post(ctx context.Context, base, path string, body map[string]any, key string) (phoneEvents, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return phoneEvents{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return phoneEvents{}, fmt.Errorf("POST %s: %s %s", path, resp.Status, msg)
	}
	ev := phoneEvents{replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type  string
			RunID string `json:"runId"`
			Value struct {
				InboxItemID string  `json:"inboxItemId"`
				Bucket      string  `json:"bucket"`
				Confidence  float64 `json:"confidence"`
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return ev, err
		}
		switch e.Type {
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED", "ERROR":
			ev.outcome, ev.itemID, ev.bucket, ev.confidence = e.Type, e.Value.InboxItemID, e.Value.Bucket, e.Value.Confidence
		case "COMPLETE":
			ev.runID = e.RunID
		}
	}
	if ev.runID == "" {
		return ev, fmt.Errorf("POST %s: no COMPLETE (%v)", path, sc.Err())
	}
	return ev, sc.Err()
}

// inboxItem is the part of an inbox item the workload reads.
type inboxItem struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	AgentRun *struct {
		RunID        string `json:"runId"`
		AgentVersion string `json:"agentVersion"`
		Outcome      string `json:"outcome"`
		Bucket       string `json:"bucket"`
	} `json:"agentRun"`
}

// call sends an inbox request and decodes its JSON answer into out.
func call(ctx context.Context, method, url, body string, out any) error {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, r)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %s", method, url, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
