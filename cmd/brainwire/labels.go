package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/server"
)

const labelsUsage = `usage: brainwire export-labels [-user ID] [-o FILE]

Writes a labelled corpus for brainwire eval from the configured store
(Cosmos DB when COSMOS_ENDPOINT is set, else the SQLite file in
BRAINWIRE_DATA_DIR): every inbox item whose bucket a person chose, by
recategorizing it to another bucket or confirming the agent's, is a case
whose expected bucket is theirs. Only reads.

flags:
`

// labelMeta is where a label came from, kept in the case's meta.
type labelMeta struct {
	User  string `json:"user"`
	Label string `json:"label"` // "recategorized" or "confirmed"
	// The agent's run, as the item recorded it.
	AgentOutcome brainwire.Outcome `json:"agent_outcome,omitempty"`
	AgentBucket  string            `json:"agent_bucket,omitempty"`
	AgentVersion string            `json:"agent_version,omitempty"`
	AgentRunID   string            `json:"agent_run_id,omitempty"`
	TraceID      string            `json:"trace_id,omitempty"`
	LabelledAt   time.Time         `json:"labelled_at"`
}

func exportLabels(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("export-labels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, labelsUsage); fs.PrintDefaults() }
	user := fs.String("user", "", "only this user's items (default: every user's)")
	out := fs.String("o", "", "write to this `file` instead of stdout")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("export-labels: unexpected arguments %q", fs.Args())}
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	var cred credential
	store, err := openStore(ctx, cfg, getenv, &cred, false, slog.New(quiet{log.Handler(), slog.LevelWarn}))
	if err != nil {
		return err
	}
	defer store.Close()
	users := []string{*user}
	if *user == "" {
		lister, ok := store.(brainwire.UserLister)
		if !ok {
			return usageError{"export-labels: this store cannot list its users: give -user"}
		}
		if users, err = lister.ListUsers(ctx); err != nil {
			return fmt.Errorf("export-labels: %w", err)
		}
	}
	w := stdout
	var f *os.File
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			return fmt.Errorf("export-labels: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	n := 0
	for _, u := range users {
		cases, err := labelsOf(ctx, store, u)
		if err != nil {
			return err
		}
		if err := eval.WriteCorpus(bw, cases); err != nil {
			return err
		}
		n += len(cases)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export-labels: %w", err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("export-labels: %w", err)
		}
	}
	fmt.Fprintf(stderr, "export-labels: %d labels from %d user(s)\n", n, len(users))
	return nil
}

// labelsOf returns the cases a user's items make, newest first: the items
// classified by the person (server.ClassifiedByUser).
func labelsOf(ctx context.Context, store brainwire.Store, user string) ([]eval.Case, error) {
	var cases []eval.Case
	opts := brainwire.ListOptions{Status: brainwire.StatusClassified, Limit: brainwire.MaxPageSize}
	for {
		page, err := store.ListInbox(ctx, user, opts)
		if err != nil {
			return nil, fmt.Errorf("export-labels: listing %s's inbox: %w", user, err)
		}
		for _, it := range page.Items {
			if c, ok := labelOf(it); ok {
				cases = append(cases, c)
			}
		}
		if page.NextCursor == "" {
			return cases, nil
		}
		opts.Cursor = page.NextCursor
	}
}

func labelOf(it brainwire.InboxItem) (eval.Case, bool) {
	cm := it.ClassificationMeta
	if cm == nil || cm.ClassifiedBy != server.ClassifiedByUser || !brainwire.ValidBucket(cm.Bucket) || it.RawText == "" {
		return eval.Case{}, false
	}
	meta := labelMeta{User: it.UserID, Label: "recategorized", LabelledAt: cm.ClassifiedAt}
	if r := it.AgentRun; r != nil {
		meta.AgentOutcome, meta.AgentBucket, meta.AgentVersion, meta.AgentRunID, meta.TraceID = r.Outcome, r.Bucket, r.AgentVersion, r.RunID, r.TraceID
		if r.Outcome.Resolved() && r.Bucket == cm.Bucket {
			meta.Label = "confirmed"
		}
	}
	b, _ := json.Marshal(meta) // strings and a time always encode
	return eval.Case{ID: it.ID, Text: it.RawText, ExpectedBucket: cm.Bucket, Meta: b}, true
}
