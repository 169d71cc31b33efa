package simulator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/simulator"
)

// filing is what one run filed, as a comparable string, and its reasoning.
type filing struct {
	answer    string
	reasoning string
}

// respondFiling runs text once on the Responses face.
func respondFiling(t *testing.T, c *client, text string) filing {
	t.Helper()
	frames := c.respond(firstRequest(c.newConversation(), text))
	cs := calls(t, final(t, frames))
	if len(cs) != 1 {
		t.Fatalf("%q: calls %+v", text, cs)
	}
	var a fileArgs
	if err := json.Unmarshal([]byte(cs[0].Arguments), &a); err != nil || a.Confidence == nil {
		t.Fatalf("arguments %s: %v", cs[0].Arguments, err)
	}
	reasoning, _ := texts(frames, "response.reasoning_summary_text.delta")
	return filing{answer: fmt.Sprintf("%s %s %.2f", a.Bucket, a.Status, *a.Confidence), reasoning: reasoning}
}

// threadsFiling runs text once on the threads/runs face.
func threadsFiling(t *testing.T, c *client, text string) filing {
	t.Helper()
	_, cs := pendingCalls(t, c.createAndRun(text))
	a := fileCall(t, cs[0])
	return filing{answer: fmt.Sprintf("%s %s %.2f", a.Bucket, a.Status, *a.Confidence)}
}

const (
	clearPeople = "Call mom about her birthday on Sunday"
	mixed       = "Pay the bill for mom's birthday gift" // Admin and People cues
	unclear     = "qwerty zxcvb"
)

var varied = simulator.Variation{Seed: 7, ConfidenceNoise: 0.1, OtherBucket: 0.3}

// TestVariationVariesAsAModel checks that a varied simulator answers the
// same capture differently from run to run — confidences spread, another
// bucket now and then, the status following the confidence across 0.6,
// the reasoning saying so — and that a misunderstood capture stays as it
// was. Without variation every run answers the same.
func TestVariationVariesAsAModel(t *testing.T) {
	plain, _ := newSim(t, simulator.Config{})
	first := respondFiling(t, plain, mixed)
	for range 10 {
		if got := respondFiling(t, plain, mixed); got != first {
			t.Fatalf("without variation: %+v, then %+v", first, got)
		}
	}

	c, _ := newSim(t, simulator.Config{Variation: varied})
	answers := map[string]int{}
	buckets := map[string]bool{}
	sawNote := false
	for range 40 {
		f := respondFiling(t, c, mixed)
		answers[f.answer]++
		var bucket, status string
		var conf float64
		if _, err := fmt.Sscanf(f.answer, "%s %s %f", &bucket, &status, &conf); err != nil {
			t.Fatal(err)
		}
		buckets[bucket] = true
		if want := map[bool]string{true: "classified", false: "pending"}[conf >= 0.6]; status != want {
			t.Errorf("%s: status %s, want %s", f.answer, status, want)
		}
		if strings.Contains(f.reasoning, "simulated run-to-run variation") {
			sawNote = true
			if !strings.Contains(f.reasoning, fmt.Sprintf("confidence %.2f: status %s.", conf, status)) {
				t.Errorf("reasoning %q does not name %s", f.reasoning, f.answer)
			}
		}
	}
	if len(answers) < 5 || !buckets["Admin"] || !buckets["People"] || !sawNote {
		t.Errorf("40 varied runs: answers %v, buckets %v, note in reasoning %v", answers, buckets, sawNote)
	}
	for range 10 {
		if got := respondFiling(t, c, unclear).answer; got != "Ideas misunderstood 0.00" {
			t.Fatalf("a misunderstood capture varied: %s", got)
		}
	}
}

// TestVariationIsReproducible checks that a seed gives the same answers to
// the n-th run of a text whatever the order texts arrive in and whichever
// face runs them, and that another seed gives others.
func TestVariationIsReproducible(t *testing.T) {
	series := func(c *client, run func(*testing.T, *client, string) filing, order []string) map[string][]string {
		out := map[string][]string{}
		for _, text := range order {
			out[text] = append(out[text], run(t, c, text).answer)
		}
		return out
	}
	var grouped, alternating []string
	for i := range 12 {
		grouped = append(grouped, []string{clearPeople, mixed}[i/6])
		alternating = append(alternating, []string{clearPeople, mixed}[i%2])
	}
	a, _ := newSim(t, simulator.Config{Variation: varied})
	b, _ := newSim(t, simulator.Config{Variation: varied})
	threads, _ := newSim(t, simulator.Config{Variation: varied})
	other, _ := newSim(t, simulator.Config{Variation: simulator.Variation{Seed: 8, ConfidenceNoise: varied.ConfidenceNoise, OtherBucket: varied.OtherBucket}})
	want := series(a, respondFiling, grouped)
	for name, got := range map[string]map[string][]string{
		"another order":    series(b, respondFiling, alternating),
		"the threads face": series(threads, threadsFiling, alternating),
	} {
		for _, text := range []string{clearPeople, mixed} {
			if strings.Join(got[text], "|") != strings.Join(want[text], "|") {
				t.Errorf("%s, %q:\n%v\nwant\n%v", name, text, got[text], want[text])
			}
		}
	}
	if got := series(other, respondFiling, grouped); strings.Join(got[mixed], "|") == strings.Join(want[mixed], "|") {
		t.Errorf("seeds 7 and 8 drew the same: %v", got[mixed])
	}
}
