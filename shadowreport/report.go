// Package shadowreport reports shadow trials: per candidate version, how
// often the candidate agreed with production on the very same captures,
// each arm's accuracy against the person's labels with its interval, the
// paired verdict (McNemar's exact test, as eval's), and the captures
// where the arms disagree.
package shadowreport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/eval/stats"
	"github.com/brainwire/brainwire/server"
)

// Inbox is where the report reads items from: every Store is one.
type Inbox interface {
	ListInbox(ctx context.Context, userID string, opts brainwire.ListOptions) (brainwire.InboxPage, error)
}

// Read returns the users' items that have a shadow trial, each once.
func Read(ctx context.Context, inbox Inbox, users []string) ([]brainwire.InboxItem, error) {
	var out []brainwire.InboxItem
	for _, u := range users {
		seen := map[string]bool{}
		opts := brainwire.ListOptions{Limit: brainwire.MaxPageSize}
		for {
			page, err := inbox.ListInbox(ctx, u, opts)
			if err != nil {
				return nil, fmt.Errorf("listing %s's inbox: %w", u, err)
			}
			for _, it := range page.Items {
				if it.Shadow != nil && !seen[it.ID] {
					seen[it.ID] = true
					out = append(out, it)
				}
			}
			if page.NextCursor == "" {
				break
			}
			opts.Cursor = page.NextCursor
		}
	}
	return out, nil
}

// Config says how to score and link the trials.
type Config struct {
	// ConfirmAfter is how long an agent filing the person has left alone
	// counts as confirmed (its bucket the label); 0: only the person's
	// recategorizes label a capture.
	ConfirmAfter time.Duration
	// Now is when the report is made, against which ConfirmAfter runs.
	Now time.Time
	// TraceURL, when set, makes each run's trace a link, as eval's:
	// eval.TraceIDPlaceholder is replaced by the trace id.
	TraceURL string
}

// Where a capture's label came from.
const (
	Recategorized  = "recategorized"   // the person chose the bucket
	ConfirmedAfter = "confirmed_after" // the agent's filing, left alone for ConfirmAfter
)

// Report is every candidate version's trial.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	// ConfirmAfter is Config's, as a duration string.
	ConfirmAfter string      `json:"confirm_after"`
	Candidates   []Candidate `json:"candidates"`
}

// Candidate is one candidate version's trial against production.
type Candidate struct {
	Version          string `json:"version"`
	InstructionsHash string `json:"instructions_hash,omitempty"`
	Model            string `json:"model,omitempty"`
	// Production lists the production versions it was paired with.
	Production []string `json:"production_versions"`
	Pairs      int      `json:"pairs"`
	// Agreed counts the pairs whose arms agree (brainwire.ShadowTrial.Agree:
	// the same filing, or neither filing); Agreement is its share of Pairs.
	Agreed    int     `json:"agreed"`
	Agreement float64 `json:"agreement"`
	// Labelled counts the pairs with a label, by where it came from.
	Labelled       int `json:"labelled"`
	Recategorized  int `json:"recategorized"`
	ConfirmedAfter int `json:"confirmed_after"`
	// ProductionAccuracy and CandidateAccuracy are each arm's accuracy on
	// the labelled pairs, with Wilson 95% intervals; each Correct counts
	// the pairs it got right.
	ProductionAccuracy eval.Interval `json:"production_accuracy"`
	CandidateAccuracy  eval.Interval `json:"candidate_accuracy"`
	ProductionCorrect  int           `json:"production_correct"`
	CandidateCorrect   int           `json:"candidate_correct"`
	// CandidateOnly and ProductionOnly are the discordant labelled pairs:
	// right with one arm only. Test is McNemar's exact test on them.
	CandidateOnly  int          `json:"candidate_only_right"`
	ProductionOnly int          `json:"production_only_right"`
	Test           string       `json:"test"`
	PValue         float64      `json:"p_value"`
	Alpha          float64      `json:"alpha"`
	Verdict        eval.Verdict `json:"verdict"`
	// Disagreements are the pairs whose arms disagree, newest first.
	Disagreements []Disagreement `json:"disagreements"`
}

// Disagreement is a capture the arms filed differently.
type Disagreement struct {
	ItemID     string                `json:"item_id"`
	User       string                `json:"user"`
	Text       string                `json:"text"`
	Source     brainwire.CaptureKind `json:"source"`
	CapturedAt time.Time             `json:"captured_at"`
	// Label is the bucket the capture is scored against, LabelKind where it
	// came from; both empty without one.
	Label      string `json:"label,omitempty"`
	LabelKind  string `json:"label_kind,omitempty"`
	Production Arm    `json:"production"`
	Candidate  Arm    `json:"candidate"`
}

// Arm is what one arm made of a capture.
type Arm struct {
	Version    string            `json:"version"`
	RunID      string            `json:"run_id"`
	Outcome    brainwire.Outcome `json:"outcome"`
	Bucket     string            `json:"bucket,omitempty"`
	Confidence float64           `json:"confidence"`
	TraceID    string            `json:"trace_id,omitempty"`
	TraceURL   string            `json:"trace_url,omitempty"`
	Reasoning  string            `json:"reasoning,omitempty"`
	// Correct is set on a labelled capture.
	Correct *bool `json:"correct,omitempty"`
}

// Label returns the bucket an item is scored against and where it came
// from: the person's recategorize, or the production filing left alone
// for cfg.ConfirmAfter; ok is false for an item without a label.
func Label(it brainwire.InboxItem, cfg Config) (bucket, kind string, ok bool) {
	cm := it.ClassificationMeta
	if cm == nil || !brainwire.ValidBucket(cm.Bucket) {
		return "", "", false
	}
	if cm.ClassifiedBy == server.ClassifiedByUser {
		return cm.Bucket, Recategorized, true
	}
	// Only the filing the trial was paired with: a follow-up's refile is
	// the person's answer to a question, not a filing they let stand.
	t := it.Shadow
	if cfg.ConfirmAfter > 0 && it.Status == brainwire.StatusClassified && t != nil &&
		it.AgentRun != nil && it.AgentRun.RunID == t.Production.RunID && cfg.Now.Sub(it.UpdatedAt) >= cfg.ConfirmAfter {
		return cm.Bucket, ConfirmedAfter, true
	}
	return "", "", false
}

// New reports the trials on items (those without one are skipped), one
// candidate version at a time, the most recently tried first.
func New(items []brainwire.InboxItem, cfg Config) *Report {
	r := &Report{GeneratedAt: cfg.Now, ConfirmAfter: cfg.ConfirmAfter.String()}
	byVersion := map[string][]brainwire.InboxItem{}
	latest := map[string]time.Time{}
	var versions []string
	for _, it := range items {
		if it.Shadow == nil {
			continue
		}
		v := it.Shadow.Candidate.AgentVersion
		if _, ok := byVersion[v]; !ok {
			versions = append(versions, v)
		}
		byVersion[v] = append(byVersion[v], it)
		if it.Shadow.At.After(latest[v]) {
			latest[v] = it.Shadow.At
		}
	}
	slices.SortFunc(versions, func(a, b string) int {
		return cmp.Or(latest[b].Compare(latest[a]), strings.Compare(a, b))
	})
	for _, v := range versions {
		r.Candidates = append(r.Candidates, candidate(v, byVersion[v], cfg))
	}
	return r
}

func candidate(version string, items []brainwire.InboxItem, cfg Config) Candidate {
	c := Candidate{Version: version, Pairs: len(items), Test: "McNemar's exact test", Alpha: eval.Alpha}
	slices.SortStableFunc(items, func(a, b brainwire.InboxItem) int { return b.Shadow.At.Compare(a.Shadow.At) })
	for _, it := range items {
		t := it.Shadow
		c.InstructionsHash, c.Model = cmp.Or(c.InstructionsHash, t.Candidate.InstructionsHash), cmp.Or(c.Model, t.Candidate.Model)
		if pv := t.Production.AgentVersion; !slices.Contains(c.Production, pv) {
			c.Production = append(c.Production, pv)
		}
		prod := arm(t.Production, t.ProductionReasoning, cfg.TraceURL)
		cand := arm(t.Candidate, t.CandidateReasoning, cfg.TraceURL)
		label, kind, labelled := Label(it, cfg)
		if labelled {
			c.Labelled++
			if kind == Recategorized {
				c.Recategorized++
			} else {
				c.ConfirmedAfter++
			}
			pr, cr := t.Production.FiledIn() == label, t.Candidate.FiledIn() == label
			prod.Correct, cand.Correct = &pr, &cr
			c.ProductionCorrect += b2i(pr)
			c.CandidateCorrect += b2i(cr)
			c.CandidateOnly += b2i(cr && !pr)
			c.ProductionOnly += b2i(pr && !cr)
		}
		if t.Agree() {
			c.Agreed++
			continue
		}
		c.Disagreements = append(c.Disagreements, Disagreement{ItemID: it.ID, User: it.UserID, Text: it.RawText,
			Source: it.Source, CapturedAt: it.CreatedAt, Label: label, LabelKind: kind, Production: prod, Candidate: cand})
	}
	c.Agreement = float64(c.Agreed) / float64(c.Pairs)
	c.ProductionAccuracy = accuracy(c.ProductionCorrect, c.Labelled)
	c.CandidateAccuracy = accuracy(c.CandidateCorrect, c.Labelled)
	c.PValue = stats.SignTest(c.CandidateOnly, c.ProductionOnly)
	c.Verdict = eval.VerdictOf(c.PValue, c.CandidateOnly, c.ProductionOnly)
	return c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// accuracy is correct of n with its Wilson 95% interval; with no labels,
// 0 within [0, 1].
func accuracy(correct, n int) eval.Interval {
	p := 0.0
	if n > 0 {
		p = float64(correct) / float64(n)
	}
	lo, hi := stats.Wilson(p, float64(n), stats.Z95)
	return eval.Interval{Estimate: p, Low: lo, High: hi, Method: "95% Wilson score interval"}
}

func arm(r brainwire.AgentRun, reasoning, traceURL string) Arm {
	return Arm{Version: r.AgentVersion, RunID: r.RunID, Outcome: r.Outcome, Bucket: r.Bucket, Confidence: r.Confidence,
		TraceID: r.TraceID, TraceURL: eval.TraceURL(traceURL, r.TraceID), Reasoning: reasoning}
}
