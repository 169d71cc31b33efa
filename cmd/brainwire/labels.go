package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

const labelsAbout = `
Writes a labelled corpus for brainwire eval from the configured store: one case
per inbox item whose bucket a person chose, with "meta" saying where the label
came from (docs/tuning.md lists its fields). It only reads: a data directory or
database that is not there is an error, and FILE is written once every case was
read.`

// envLabels is export-labels' environment note.
const envLabels = "The store is configured by the environment, as for serve: Cosmos DB when\n" +
	"COSMOS_ENDPOINT is set (COSMOS_KEY, COSMOS_DATABASE), else the SQLite file in\n" +
	"BRAINWIRE_DATA_DIR (./data). docs/configuration.md lists every variable."

// labelMeta is where a label came from, kept in the case's meta: the
// item's capture, the person's choice and the agent run it judges. The run
// fields are absent on items filed before runs were recorded, and the
// trace ids when nothing traced the run.
type labelMeta struct {
	User       string                `json:"user"`
	Label      string                `json:"label"` // "recategorized" or "confirmed"
	Source     brainwire.CaptureKind `json:"source"`
	CapturedAt time.Time             `json:"captured_at"`
	LabelledAt time.Time             `json:"labelled_at"`

	RunID            string            `json:"run_id,omitempty"`
	TraceID          string            `json:"trace_id,omitempty"`
	SpanID           string            `json:"span_id,omitempty"`
	AgentVersion     string            `json:"agent_version,omitempty"`
	InstructionsHash string            `json:"instructions_hash,omitempty"`
	Model            string            `json:"model,omitempty"`
	AgentOutcome     brainwire.Outcome `json:"agent_outcome,omitempty"`
	AgentBucket      string            `json:"agent_bucket,omitempty"`
}

func exportLabels(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := newCommand("export-labels", "export-labels [-user ID] [-o FILE]", labelsAbout, envLabels)
	user := cmd.String("user", "", "only this user's items (default: every user's)")
	out := cmd.String("o", "", "write to this `file` instead of stdout")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	// The store's INFO lines are no news here.
	log, err := newLogger(getenv, stderr, slog.LevelWarn)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	store, err := openLabelStore(ctx, cfg, getenv, log)
	if err != nil {
		return fmt.Errorf("export-labels: %w", err)
	}
	defer store.Close()
	users, err := usersOf(ctx, "export-labels", store, *user)
	if err != nil {
		return err
	}
	var cases []eval.Case
	textless := 0
	for _, u := range users {
		c, n, err := labelsOf(ctx, store, u)
		if err != nil {
			return err
		}
		cases, textless = append(cases, c...), textless+n
	}
	if err := writeLabels(*out, stdout, cases); err != nil {
		return fmt.Errorf("export-labels: %w", err)
	}
	fmt.Fprintf(stderr, "export-labels: %s from %s", counted(len(cases), "label"), counted(len(users), "user"))
	if textless > 0 {
		fmt.Fprintf(stderr, "; %s without text left out", counted(textless, "labelled item"))
	}
	fmt.Fprintln(stderr)
	return nil
}

// usersOf is the users command cmd reads the store for: user when given,
// else every user the store has.
func usersOf(ctx context.Context, cmd string, store any, user string) ([]string, error) {
	if user != "" {
		return []string{user}, nil
	}
	lister, ok := store.(brainwire.UserLister)
	if !ok {
		return nil, usageError{cmd + ": this store cannot list its users: give -user"}
	}
	users, err := lister.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return users, nil
}

// openLabelStore opens the configured store to read it. The SQLite file
// is opened read-only: a missing one is an error, never created empty.
func openLabelStore(ctx context.Context, cfg config, getenv func(string) string, log *slog.Logger) (brainwire.Store, error) {
	if getenv("COSMOS_ENDPOINT") == "" {
		st, err := sqlite.OpenReadOnly(ctx, sqlitePath(cfg))
		if err != nil {
			// Name the setting: a typo in it is the likely cause.
			return nil, fmt.Errorf("reading BRAINWIRE_DATA_DIR=%s: %w", cfg.DataDir, err)
		}
		return st, nil
	}
	cred := newCredential()
	return openStore(ctx, cfg, getenv, cred, false, log)
}

// writeLabels writes the corpus to the file named path, or to stdout when
// path is "".
func writeLabels(path string, stdout io.Writer, cases []eval.Case) (err error) {
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		stdout = f
	}
	bw := bufio.NewWriter(stdout)
	if err := eval.WriteCorpus(bw, cases); err != nil {
		return err
	}
	return bw.Flush()
}

// labelsOf returns the cases a user's items make, newest first: one per
// item classified by the person (server.ClassifiedByUser), and how many
// such items have no text to make a case of (a voice capture never
// transcribed).
func labelsOf(ctx context.Context, store brainwire.Store, user string) (cases []eval.Case, textless int, err error) {
	// One case per item whatever the pages hold: an item listed twice
	// keeps its later label, the person's latest word.
	index := map[string]int{}
	var labelled []time.Time
	opts := brainwire.ListOptions{Status: brainwire.StatusClassified, Limit: brainwire.MaxPageSize}
	for {
		page, err := store.ListInbox(ctx, user, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("export-labels: listing %s's inbox: %w", user, err)
		}
		for _, it := range page.Items {
			c, ok := labelOf(it)
			if !ok {
				if isLabel(it) {
					textless++
				}
				continue
			}
			at := it.ClassificationMeta.ClassifiedAt
			if i, dup := index[it.ID]; dup {
				if at.After(labelled[i]) {
					cases[i], labelled[i] = c, at
				}
				continue
			}
			index[it.ID] = len(cases)
			cases, labelled = append(cases, c), append(labelled, at)
		}
		if page.NextCursor == "" {
			return cases, textless, nil
		}
		opts.Cursor = page.NextCursor
	}
}

// isLabel reports whether a person chose the item's bucket.
func isLabel(it brainwire.InboxItem) bool {
	cm := it.ClassificationMeta
	return cm != nil && cm.ClassifiedBy == server.ClassifiedByUser && brainwire.ValidBucket(cm.Bucket)
}

func labelOf(it brainwire.InboxItem) (eval.Case, bool) {
	if !isLabel(it) || it.RawText == "" {
		return eval.Case{}, false
	}
	cm := it.ClassificationMeta
	meta := labelMeta{User: it.UserID, Label: "recategorized", Source: it.Source, CapturedAt: it.CreatedAt, LabelledAt: cm.ClassifiedAt}
	if r := it.AgentRun; r != nil {
		meta.RunID, meta.TraceID, meta.SpanID = r.RunID, r.TraceID, r.SpanID
		meta.AgentVersion, meta.InstructionsHash, meta.Model = r.AgentVersion, r.InstructionsHash, r.Model
		meta.AgentOutcome, meta.AgentBucket = r.Outcome, r.Bucket
		if r.Outcome.Resolved() && r.Bucket == cm.Bucket {
			meta.Label = "confirmed"
		}
	}
	b, _ := json.Marshal(meta) // strings and times always encode
	return eval.Case{ID: it.ID, Text: it.RawText, ExpectedBucket: cm.Bucket, Meta: b}, true
}
