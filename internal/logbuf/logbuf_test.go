package logbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/logbuf"
	"github.com/brainwire/brainwire/internal/syncbuf"
)

// countingWriter counts the writes it gets.
type countingWriter struct {
	syncbuf.Buffer
	mu     sync.Mutex
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Buffer.Write(p)
}

func (c *countingWriter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func TestLinesAreBatchedAndNoneLost(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, 20*time.Millisecond, 1<<10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(w, "goroutine=%d line=%d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "goroutine=") || seen[l] {
			t.Fatalf("line %q torn or repeated", l)
		}
		seen[l] = true
	}
	if n := out.count(); n >= 100 {
		t.Errorf("800 lines in %d writes", n)
	}
	// After Close, writes go straight through.
	fmt.Fprintln(w, "late")
	if !strings.HasSuffix(out.String(), "late\n") {
		t.Error("a write after Close was held")
	}
}

func TestALineIsWrittenWithinTheDelay(t *testing.T) {
	out := &countingWriter{}
	w := logbuf.New(out, 10*time.Millisecond, 1<<20)
	defer w.Close()
	fmt.Fprintln(w, "one line")
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one line\n" {
		if time.Now().After(deadline) {
			t.Fatalf("not written: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}
