package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/shadowreport"
)

const shadowReportAbout = `
Reports the shadow trials kept in the configured store: for each candidate
version, its agreement with production on the same captures, each arm's
accuracy on the captures a person labelled (a recategorize, or an agent filing
left alone for -confirm-after) with 95% intervals, the paired verdict (McNemar's
exact test), and the captures where the arms disagree. It only reads the store.
docs/tuning.md says how to read it.`

// envShadowReport is shadow-report's environment note.
const envShadowReport = envLabels + "\nBRAINWIRE_SHADOW_CONFIRM_AFTER is -confirm-after's default (168h)."

// reportStore is what shadow-report reads: an inbox it closes after.
type reportStore interface {
	shadowreport.Inbox
	Close() error
}

// openReportStore opens the configured store read-only, as export-labels
// does.
func openReportStore(ctx context.Context, getenv func(string) string, log *slog.Logger) (reportStore, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return nil, err
	}
	st, err := openLabelStore(ctx, cfg, getenv, log)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func shadowReportCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return shadowReport(ctx, args, getenv, stdout, stderr, openReportStore, time.Now())
}

// shadowReport is shadow-report reading the store open returns, at now.
func shadowReport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer,
	open func(context.Context, func(string) string, *slog.Logger) (reportStore, error), now time.Time) error {
	confirmDefault, err := shadowConfirmAfter(getenv)
	if err != nil {
		return fmt.Errorf("shadow-report: %w", err)
	}
	cmd := newCommand("shadow-report", "shadow-report [-user ID] [-confirm-after D] [-json] [-html FILE] [-trace-url T]",
		shadowReportAbout, envShadowReport)
	user := cmd.String("user", "", "only this user's items (default: every user's)")
	confirmAfter := cmd.Duration("confirm-after", confirmDefault, "count an agent filing left alone this long as confirmed (0: only recategorizes label)")
	asJSON := cmd.Bool("json", false, "write the report as JSON instead of text")
	htmlPath := cmd.String("html", "", "also write the report as one self-contained HTML page to this `file`")
	traceURL := cmd.String("trace-url", "", "link each run to its trace: this URL `template` with {trace_id} replaced")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	switch {
	case *confirmAfter < 0:
		return usageError{"shadow-report: -confirm-after must not be negative"}
	case *traceURL != "" && !strings.Contains(*traceURL, eval.TraceIDPlaceholder):
		return usageError{"shadow-report: -trace-url must contain " + eval.TraceIDPlaceholder}
	}
	log, err := newLogger(getenv, stderr, slog.LevelWarn)
	if err != nil {
		return err
	}
	store, err := open(ctx, getenv, log)
	if err != nil {
		return fmt.Errorf("shadow-report: %w", err)
	}
	defer store.Close()
	users, err := usersOf(ctx, "shadow-report", store, *user)
	if err != nil {
		return err
	}
	items, err := shadowreport.Read(ctx, store, users)
	if err != nil {
		return fmt.Errorf("shadow-report: %w", err)
	}
	rep := shadowreport.New(items, shadowreport.Config{ConfirmAfter: *confirmAfter, Now: now, TraceURL: *traceURL})
	if *htmlPath != "" {
		if err := writeShadowHTML(*htmlPath, rep); err != nil {
			return fmt.Errorf("shadow-report: %w", err)
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteText(stdout)
}

func writeShadowHTML(path string, rep *shadowreport.Report) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return rep.WriteHTML(f)
}
