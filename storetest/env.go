package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
)

// base is the first filing's Now: not UTC and finer than a millisecond, so
// that stores have to normalize.
var base = time.Date(2026, time.March, 14, 9, 26, 53, 589_793_238, time.FixedZone("CET", 3600))

// env is one subtest's store and user.
type env struct {
	t    *testing.T
	s    brainwire.Store
	ctx  context.Context
	user string
	n    int // filings made, for distinct texts and times
}

func newEnv(t *testing.T, s brainwire.Store) *env {
	return &env{t: t, s: s, ctx: t.Context(), user: newID("user")}
}

func newID(prefix string) string { return prefix + "-" + uuid.NewString() }

// at returns the Now of the i-th filing: one second apart.
func at(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

// filing returns a new capture's filing with every field set, for e.user.
// Each call gets the next time slot.
func (e *env) filing(status, bucket string) brainwire.Filing {
	i := e.n
	e.n++
	now := at(i)
	conf := 0.91
	switch status {
	case brainwire.StatusPending:
		conf = 0.42
	case brainwire.StatusMisunderstood:
		conf = 0.18
	case brainwire.StatusUnresolved:
		conf = 0
	}
	return brainwire.Filing{
		UserID:      e.user,
		NewInboxID:  newID("inbox"),
		NewRecordID: newID("rec"),
		RawText:     fmt.Sprintf("capture %d: ask Zoë about the “garden” plan ✓\nsecond line", i),
		Title:       fmt.Sprintf("Garden plan %d", i),
		Source:      brainwire.KindText,
		Status:      status,
		Classification: brainwire.Classification{
			Bucket:       bucket,
			Confidence:   conf,
			AllScores:    map[string]float64{brainwire.BucketPeople: conf, brainwire.BucketIdeas: 0.07, brainwire.BucketAdmin: 0.015625},
			ClassifiedBy: "Classifier",
			AgentChain:   []string{"Orchestrator", "Classifier"},
			ClassifiedAt: now.Add(-1500 * time.Millisecond),
		},
		FoundryThreadID: newID("thread"),
		AgentRun: &brainwire.AgentRun{
			RunID:            newID("run"),
			AgentVersion:     "2026-03-14",
			InstructionsHash: "3f2a9c1b04de",
			Model:            "gpt-4o",
			Outcome:          brainwire.OutcomeOfStatus(status),
			Bucket:           bucket,
			Confidence:       conf,
			TraceID:          "0af7651916cd43dd8448eb211c80319c",
			SpanID:           fmt.Sprintf("b7ad6b71692033%02x", i%256),
		},
		Now: now,
	}
}

// file files f and checks that the returned item is what the store returns
// afterwards.
func (e *env) file(f brainwire.Filing) brainwire.InboxItem {
	e.t.Helper()
	got, err := e.s.File(e.ctx, f)
	if err != nil {
		e.t.Fatalf("File(%s %s): %v", f.Status, f.Classification.Bucket, err)
	}
	stored := e.get(got.ID)
	report(e.t, "File result vs stored item", diffItem(got, stored, 0))
	return got
}

func (e *env) get(id string) brainwire.InboxItem {
	e.t.Helper()
	it, err := e.s.GetInboxItem(e.ctx, e.user, id)
	if err != nil {
		e.t.Fatalf("GetInboxItem(%s): %v", id, err)
	}
	return it
}

func (e *env) record(bucket, id string) brainwire.BucketRecord {
	e.t.Helper()
	r, err := e.s.GetBucketRecord(e.ctx, e.user, bucket, id)
	if err != nil {
		e.t.Fatalf("GetBucketRecord(%s, %s): %v", bucket, id, err)
	}
	return r
}

// noRecord checks that no bucket holds a record with this id for e.user.
func (e *env) noRecord(id string) {
	e.t.Helper()
	for _, b := range brainwire.Buckets {
		r, err := e.s.GetBucketRecord(e.ctx, e.user, b, id)
		if code := brainwire.ErrorCode(err); code != brainwire.ENotFound {
			e.t.Errorf("GetBucketRecord(%s, %s) = %+v, code %q (%v); want %s", b, id, r, code, err, brainwire.ENotFound)
		}
	}
}

// onlyRecord checks that the record with this id is in bucket and in no
// other, and returns it.
func (e *env) onlyRecord(bucket, id string) brainwire.BucketRecord {
	e.t.Helper()
	for _, b := range brainwire.Buckets {
		if b == bucket {
			continue
		}
		_, err := e.s.GetBucketRecord(e.ctx, e.user, b, id)
		if code := brainwire.ErrorCode(err); code != brainwire.ENotFound {
			e.t.Errorf("record %s also found in %s: code %q (%v)", id, b, code, err)
		}
	}
	return e.record(bucket, id)
}

// listAll pages through the user's inbox and returns every item and the
// size of every page.
func (e *env) listAll(opts brainwire.ListOptions) (items []brainwire.InboxItem, sizes []int) {
	e.t.Helper()
	for range 1000 {
		page, err := e.s.ListInbox(e.ctx, e.user, opts)
		if err != nil {
			e.t.Fatalf("ListInbox(%+v): %v", opts, err)
		}
		items = append(items, page.Items...)
		sizes = append(sizes, len(page.Items))
		if page.NextCursor == "" {
			return items, sizes
		}
		if len(page.Items) == 0 {
			e.t.Fatalf("ListInbox(%+v): empty page with a NextCursor", opts)
		}
		opts.Cursor = page.NextCursor
	}
	e.t.Fatalf("ListInbox(%+v): cursor never ends", opts)
	return nil, nil
}

// ids returns the items' ids.
func ids(items []brainwire.InboxItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// newItem is the item a new capture's filing must produce.
func newItem(f brainwire.Filing) brainwire.InboxItem {
	c := f.Classification
	it := brainwire.InboxItem{
		ID:                 f.NewInboxID,
		UserID:             f.UserID,
		RawText:            f.RawText,
		Title:              f.Title,
		Source:             f.Source,
		Status:             f.Status,
		ClassificationMeta: &c,
		FoundryThreadID:    f.FoundryThreadID,
		FollowUpRounds:     f.FollowUpRound,
		CreatedAt:          f.Now,
		UpdatedAt:          f.Now,
	}
	if f.AgentRun != nil {
		r := *f.AgentRun
		it.AgentRun = &r
	}
	if f.FilesRecord() {
		it.FiledRecordID = f.NewRecordID
	}
	if f.Key != nil {
		it.FiledUnder = &brainwire.KeyRecord{Key: f.Key.Key, Replay: *f.Key.Replay}
	}
	return it
}

// refiledItem is what refiling before with f must produce.
func refiledItem(before brainwire.InboxItem, f brainwire.Filing) brainwire.InboxItem {
	it := newItem(f)
	it.ID = before.ID
	it.Source = before.Source
	it.CreatedAt = before.CreatedAt
	if f.FoundryThreadID == "" {
		it.FoundryThreadID = before.FoundryThreadID
	}
	if f.FollowUpRound == 0 {
		it.FollowUpRounds = before.FollowUpRounds
	}
	if f.AgentRun == nil {
		it.AgentRun = before.AgentRun
	}
	return it
}

// recordFor is the bucket record a classified or pending filing of item
// must produce.
func recordFor(it brainwire.InboxItem, createdAt time.Time) brainwire.BucketRecord {
	c := *it.ClassificationMeta
	return brainwire.BucketRecord{
		ID:                 it.FiledRecordID,
		UserID:             it.UserID,
		Bucket:             c.Bucket,
		RawText:            it.RawText,
		Title:              it.Title,
		ClassificationMeta: &c,
		InboxRecordID:      it.ID,
		CreatedAt:          createdAt,
	}
}

// checkCode reports err's code when it is not want.
func checkCode(t *testing.T, what string, err error, want string) {
	t.Helper()
	if got := brainwire.ErrorCode(err); got != want {
		t.Errorf("%s: code %q (err %v), want %q", what, got, err, want)
	}
}

// checkCanceled reports err unless it is the context's cancellation.
func checkCanceled(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%s: err %v, want one wrapping context.Canceled", what, err)
	}
}

// checkItem reports how got differs from want, times to the millisecond.
func checkItem(t *testing.T, what string, got, want brainwire.InboxItem) {
	t.Helper()
	report(t, what, diffItem(got, want, time.Millisecond))
}

func checkRecord(t *testing.T, what string, got, want brainwire.BucketRecord) {
	t.Helper()
	report(t, what, diffRecord(got, want, time.Millisecond))
}

func report(t *testing.T, what string, diffs []string) {
	t.Helper()
	for _, d := range diffs {
		t.Errorf("%s: %s", what, d)
	}
}

// diffItem lists the fields where got differs from want. Times must be in
// UTC and less than tol away from want; a tol of 0 means equal.
func diffItem(got, want brainwire.InboxItem, tol time.Duration) []string {
	var d []string
	str := func(field, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %q, want %q", field, g, w))
		}
	}
	str("ID", got.ID, want.ID)
	str("UserID", got.UserID, want.UserID)
	str("RawText", got.RawText, want.RawText)
	str("Title", got.Title, want.Title)
	str("Source", string(got.Source), string(want.Source))
	str("Status", got.Status, want.Status)
	str("FiledRecordID", got.FiledRecordID, want.FiledRecordID)
	str("FoundryThreadID", got.FoundryThreadID, want.FoundryThreadID)
	if got.FollowUpRounds != want.FollowUpRounds {
		d = append(d, fmt.Sprintf("FollowUpRounds = %d, want %d", got.FollowUpRounds, want.FollowUpRounds))
	}
	d = append(d, diffTime("CreatedAt", got.CreatedAt, want.CreatedAt, tol)...)
	d = append(d, diffTime("UpdatedAt", got.UpdatedAt, want.UpdatedAt, tol)...)
	d = append(d, diffClassification(got.ClassificationMeta, want.ClassificationMeta, tol)...)
	switch g, w := got.AgentRun, want.AgentRun; {
	case g == nil && w == nil:
	case g == nil || w == nil || *g != *w:
		d = append(d, fmt.Sprintf("AgentRun = %s, want %s", runString(g), runString(w)))
	}
	d = append(d, diffClaim(got.FollowUpClaim, want.FollowUpClaim, tol)...)
	switch g, w := got.FiledUnder, want.FiledUnder; {
	case g == nil && w == nil:
	case g == nil || w == nil || *g != *w:
		d = append(d, fmt.Sprintf("FiledUnder = %+v, want %+v", g, w))
	}
	return d
}

func diffClaim(got, want *brainwire.FollowUpClaim, tol time.Duration) []string {
	switch {
	case got == nil && want == nil:
		return nil
	case got == nil:
		return []string{fmt.Sprintf("FollowUpClaim = nil, want %+v", *want)}
	case want == nil:
		return []string{fmt.Sprintf("FollowUpClaim = %+v, want nil", *got)}
	}
	var d []string
	if got.Round != want.Round || got.Token != want.Token {
		d = append(d, fmt.Sprintf("FollowUpClaim round %d token %q, want round %d token %q", got.Round, got.Token, want.Round, want.Token))
	}
	d = append(d, diffTime("FollowUpClaim.At", got.At, want.At, tol)...)
	d = append(d, diffTime("FollowUpClaim.Until", got.Until, want.Until, tol)...)
	return d
}

func runString(r *brainwire.AgentRun) string {
	if r == nil {
		return "nil"
	}
	return fmt.Sprintf("%+v", *r)
}

func diffRecord(got, want brainwire.BucketRecord, tol time.Duration) []string {
	var d []string
	str := func(field, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %q, want %q", field, g, w))
		}
	}
	str("ID", got.ID, want.ID)
	str("UserID", got.UserID, want.UserID)
	str("Bucket", got.Bucket, want.Bucket)
	str("RawText", got.RawText, want.RawText)
	str("Title", got.Title, want.Title)
	str("InboxRecordID", got.InboxRecordID, want.InboxRecordID)
	d = append(d, diffTime("CreatedAt", got.CreatedAt, want.CreatedAt, tol)...)
	d = append(d, diffClassification(got.ClassificationMeta, want.ClassificationMeta, tol)...)
	return d
}

func diffClassification(got, want *brainwire.Classification, tol time.Duration) []string {
	switch {
	case got == nil && want == nil:
		return nil
	case got == nil:
		return []string{fmt.Sprintf("ClassificationMeta = nil, want %+v", *want)}
	case want == nil:
		return []string{fmt.Sprintf("ClassificationMeta = %+v, want nil", *got)}
	}
	var d []string
	if got.Bucket != want.Bucket {
		d = append(d, fmt.Sprintf("ClassificationMeta.Bucket = %q, want %q", got.Bucket, want.Bucket))
	}
	if got.Confidence != want.Confidence {
		d = append(d, fmt.Sprintf("ClassificationMeta.Confidence = %v, want %v", got.Confidence, want.Confidence))
	}
	// nil and empty are the same document.
	if len(got.AllScores) != len(want.AllScores) || !maps.Equal(got.AllScores, want.AllScores) {
		d = append(d, fmt.Sprintf("ClassificationMeta.AllScores = %v, want %v", got.AllScores, want.AllScores))
	}
	if got.ClassifiedBy != want.ClassifiedBy {
		d = append(d, fmt.Sprintf("ClassificationMeta.ClassifiedBy = %q, want %q", got.ClassifiedBy, want.ClassifiedBy))
	}
	if !slices.Equal(got.AgentChain, want.AgentChain) {
		d = append(d, fmt.Sprintf("ClassificationMeta.AgentChain = %q, want %q", got.AgentChain, want.AgentChain))
	}
	d = append(d, diffTime("ClassificationMeta.ClassifiedAt", got.ClassifiedAt, want.ClassifiedAt, tol)...)
	return d
}

func diffTime(field string, got, want time.Time, tol time.Duration) []string {
	var d []string
	if got.Location() != time.UTC {
		d = append(d, fmt.Sprintf("%s = %v, want it in UTC", field, got))
	}
	if want.IsZero() {
		if !got.IsZero() {
			d = append(d, fmt.Sprintf("%s = %v, want the zero time", field, got))
		}
		return d
	}
	if a := got.Sub(want).Abs(); a != 0 && a >= tol {
		d = append(d, fmt.Sprintf("%s = %v, want %v", field, got, want.UTC()))
	}
	return d
}
