package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
		UpstreamThreadID: newID("thread"),
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
	exact(e.t, "File result vs stored item", got, stored)
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

// The expected values below are the contract stated field by field, not
// the root package's builders (Filing.NewItem, Filing.Refile,
// InboxItem.Record) that the stores share: a mistake there must show here.

// filed is the item a new capture's filing must make: the filing's values,
// its classification whatever the status, linked to its bucket record when
// it files one (classified and pending), and to its key when it has one.
func filed(f brainwire.Filing) brainwire.InboxItem {
	c, run := f.Classification, f.AgentRun
	it := brainwire.InboxItem{ID: f.NewInboxID, UserID: f.UserID, RawText: f.RawText, Title: f.Title,
		Source: f.Source, Status: f.Status, ClassificationMeta: &c, UpstreamThreadID: f.UpstreamThreadID,
		FollowUpRounds: f.FollowUpRound, AgentRun: run, CreatedAt: f.Now, UpdatedAt: f.Now}
	if f.Status == brainwire.StatusClassified || f.Status == brainwire.StatusPending {
		it.FiledRecordID = f.NewRecordID
	}
	if f.Key != nil {
		it.FiledUnder = &brainwire.KeyRecord{Key: f.Key.Key, Replay: *f.Key.Replay}
	}
	return it
}

// refiled is before after the follow-up filing f: the same item (id,
// source, creation time), with f's text, title, status, classification,
// record and time, its thread, round and run where f names them, and no
// claim left.
func refiled(before brainwire.InboxItem, f brainwire.Filing) brainwire.InboxItem {
	it, c := before, f.Classification
	it.RawText, it.Title, it.Status, it.ClassificationMeta = f.RawText, f.Title, f.Status, &c
	it.FiledRecordID, it.UpdatedAt, it.FollowUpClaim = filed(f).FiledRecordID, f.Now, nil
	it.FiledUnder = filed(f).FiledUnder
	if f.UpstreamThreadID != "" {
		it.UpstreamThreadID = f.UpstreamThreadID
	}
	if f.FollowUpRound != 0 {
		it.FollowUpRounds = f.FollowUpRound
	}
	if f.AgentRun != nil {
		it.AgentRun = f.AgentRun
	}
	return it
}

// recordOf is the bucket record item links to, created at createdAt: the
// item's text, title and classification, and a link back.
func recordOf(it brainwire.InboxItem, createdAt time.Time) brainwire.BucketRecord {
	return brainwire.BucketRecord{ID: it.FiledRecordID, UserID: it.UserID, Bucket: it.ClassificationMeta.Bucket,
		RawText: it.RawText, Title: it.Title, ClassificationMeta: it.ClassificationMeta, InboxRecordID: it.ID, CreatedAt: createdAt}
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

// check reports how got differs from want (two items, records or keys),
// times to the millisecond.
func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	report(t, what, diff("", reflect.ValueOf(got), reflect.ValueOf(want), time.Millisecond))
}

func report(t *testing.T, what string, diffs []string) {
	t.Helper()
	for _, d := range diffs {
		t.Errorf("%s: %s", what, d)
	}
}

// diff lists the fields where got differs from want. Times must be in UTC
// and less than tol away from want (a tol of 0 means equal); an empty map
// or slice is the same document as none.
func diff(field string, got, want reflect.Value, tol time.Duration) []string {
	differs := func() []string { return []string{fmt.Sprintf("%s = %+v, want %+v", field, got, want)} }
	switch {
	case got.Type() == reflect.TypeFor[time.Time]():
		return diffTime(field, got.Interface().(time.Time), want.Interface().(time.Time), tol)
	case got.Kind() == reflect.Pointer:
		if got.IsNil() || want.IsNil() {
			if got.IsNil() != want.IsNil() {
				return differs()
			}
			return nil
		}
		return diff(field, got.Elem(), want.Elem(), tol)
	case got.Kind() == reflect.Struct:
		var d []string
		for i := range got.NumField() {
			d = append(d, diff(strings.TrimPrefix(field+"."+got.Type().Field(i).Name, "."), got.Field(i), want.Field(i), tol)...)
		}
		return d
	case got.Kind() == reflect.Map || got.Kind() == reflect.Slice:
		if got.Len() != 0 || want.Len() != 0 {
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				return differs()
			}
		}
		return nil
	case !got.Equal(want):
		return differs()
	}
	return nil
}

func diffTime(field string, got, want time.Time, tol time.Duration) []string {
	var d []string
	if got.Location() != time.UTC {
		d = append(d, fmt.Sprintf("%s = %v, want it in UTC", field, got))
	}
	if a := got.Sub(want).Abs(); want.IsZero() != got.IsZero() || a != 0 && a >= tol {
		d = append(d, fmt.Sprintf("%s = %v, want %v", field, got, want.UTC()))
	}
	return d
}

// exact reports how got differs from want to the nanosecond: what a call
// returns must be what is stored.
func exact[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	report(t, what, diff("", reflect.ValueOf(got), reflect.ValueOf(want), 0))
}
