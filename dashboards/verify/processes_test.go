package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/brainwire/brainwire/internal/process"
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
func (s *stack) run(name string, env map[string]string, args ...string) (*process.Proc, error) {
	cmd := exec.Command(s.bin, args...)
	cmd.Env = baseEnv()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	dieWithTest(cmd)
	p, err := process.Start(name, cmd, filepath.Join(s.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	// As an orchestrator stops it (SIGTERM: serve drains and flushes its
	// telemetry).
	s.stops = append(s.stops, func() { _ = p.Stop(20 * time.Second) })
	return p, nil
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
