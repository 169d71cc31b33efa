package brainwire

import (
	"context"
	"math"
	"time"
)

// Buckets a capture can be filed into. Each has its own container.
const (
	BucketPeople   = "People"
	BucketProjects = "Projects"
	BucketIdeas    = "Ideas"
	BucketAdmin    = "Admin"
)

// Buckets lists the valid buckets in display order.
var Buckets = []string{BucketPeople, BucketProjects, BucketIdeas, BucketAdmin}

// ValidBucket reports whether b names a bucket.
func ValidBucket(b string) bool {
	switch b {
	case BucketPeople, BucketProjects, BucketIdeas, BucketAdmin:
		return true
	}
	return false
}

// Inbox item statuses. The first three are file_capture's; the agent
// cannot file the last.
const (
	StatusClassified    = "classified"
	StatusPending       = "pending" // low confidence: the person picks the bucket
	StatusMisunderstood = "misunderstood"
	// StatusUnresolved is a capture whose agent run ended without filing
	// it: the server keeps it, in no bucket, for a person to file.
	StatusUnresolved = "unresolved"
)

// ValidStatus reports whether s is an inbox item's status.
func ValidStatus(s string) bool {
	switch s {
	case StatusClassified, StatusPending, StatusMisunderstood, StatusUnresolved:
		return true
	}
	return false
}

// ConfidenceThreshold is the lowest confidence filed as classified.
const ConfidenceThreshold = 0.6

// Classification records how a capture was classified.
type Classification struct {
	Bucket       string             `json:"bucket"`
	Confidence   float64            `json:"confidence"`
	AllScores    map[string]float64 `json:"allScores,omitempty"`
	ClassifiedBy string             `json:"classifiedBy"`
	AgentChain   []string           `json:"agentChain,omitempty"`
	ClassifiedAt time.Time          `json:"classifiedAt"`
}

// InboxItem is every capture's record, whatever became of it.
type InboxItem struct {
	ID                 string          `json:"id"`
	UserID             string          `json:"userId"`
	RawText            string          `json:"rawText"`
	Title              string          `json:"title"`
	Source             CaptureKind     `json:"source"` // text or voice
	Status             string          `json:"status"`
	ClassificationMeta *Classification `json:"classificationMeta"`
	FiledRecordID      string          `json:"filedRecordId"`
	// UpstreamThreadID is the agent service's thread, conversation or
	// session the item was filed in, whichever API ran it; the JSON name
	// is the one the app and stored items have always had.
	UpstreamThreadID string `json:"foundryThreadId"`
	// FollowUpRounds counts the follow-ups filed onto the item.
	FollowUpRounds int `json:"followUpRounds"`
	// AgentRun is the agent run that filed the item; nil on items filed
	// before runs were recorded.
	AgentRun *AgentRun `json:"agentRun,omitempty"`
	// FollowUpClaim is the follow-up round being answered right now, if
	// any: the store's business, not the phone's.
	FollowUpClaim *FollowUpClaim `json:"-"`
	// FiledUnder is the Idempotency-Key of the request that filed the item
	// last (Filing.Key), where a claim that takes the key over finds what
	// its dead run filed; the store's business too.
	FiledUnder *KeyRecord `json:"-"`
	// Shadow is the shadow trial run on the item's capture, if one ran:
	// the tuner's business, never the phone's.
	Shadow    *ShadowTrial `json:"-"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
}

// AgentRun records the agent run that filed an inbox item: which agent
// version decided, what it decided, and where the run's trace is. A
// person's recategorize leaves it as it was, so that the agent's call and
// the person's can be compared and the correction linked to the run; a
// follow-up's filing replaces it with the follow-up's run.
type AgentRun struct {
	// RunID is the capture's run id (COMPLETE's runId).
	RunID string `json:"runId"`
	// AgentVersion, InstructionsHash and Model are the agent's
	// (AgentInfo) when the capture started.
	AgentVersion     string `json:"agentVersion,omitempty"`
	InstructionsHash string `json:"instructionsHash,omitempty"`
	Model            string `json:"model,omitempty"`
	// Outcome, Bucket and Confidence are what the agent filed: classified,
	// low_confidence or misunderstood (with its best guess of a bucket),
	// or unresolved (no bucket) when its run filed nothing.
	Outcome    Outcome `json:"outcome"`
	Bucket     string  `json:"bucket,omitempty"`
	Confidence float64 `json:"confidence"`
	// TraceID and SpanID locate the run's invoke_agent span (TraceRef).
	TraceID string `json:"traceId,omitempty"`
	SpanID  string `json:"spanId,omitempty"`
}

// Trace returns where the run was traced.
func (r *AgentRun) Trace() TraceRef {
	if r == nil {
		return TraceRef{}
	}
	return TraceRef{TraceID: r.TraceID, SpanID: r.SpanID}
}

// BucketRecord is the document a classified or pending capture adds to its
// bucket's container. For People, Title is the person's name.
type BucketRecord struct {
	ID                 string          `json:"id"`
	UserID             string          `json:"userId"`
	Bucket             string          `json:"-"` // the container it lives in
	RawText            string          `json:"rawText"`
	Title              string          `json:"title"`
	ClassificationMeta *Classification `json:"classificationMeta"`
	InboxRecordID      string          `json:"inboxRecordId"`
	CreatedAt          time.Time       `json:"createdAt"`
}

// Filing is one file_capture outcome to store, or an unresolved capture
// the server keeps. When InboxItemID names an existing item (follow-up),
// that item is updated in place; otherwise a new Inbox item is created with
// id NewInboxID. Classified and pending filings also create a bucket record
// with id NewRecordID, linked both ways; misunderstood and unresolved
// filings write the Inbox only. An unresolved filing is always a new item.
type Filing struct {
	UserID           string
	InboxItemID      string // existing item to refile; empty for a new capture
	NewInboxID       string
	NewRecordID      string
	RawText          string
	Title            string
	Source           CaptureKind
	Status           string
	Classification   Classification
	UpstreamThreadID string
	// FollowUpRound is the follow-up this refile answers (1, 2, ...); the
	// item keeps it as FollowUpRounds. 0 keeps the item's count.
	FollowUpRound int
	// AgentRun is the run that files the capture, kept on the item; nil
	// records none.
	AgentRun *AgentRun
	// ClaimToken names the follow-up claim (FollowUpClaim.Token) the
	// refile answers; see CheckRefile. The refiled item holds no claim.
	ClaimToken string
	// Key, when the request carried an Idempotency-Key, is that key as the
	// filing settles it: the run's claim (Token) done with what the phone
	// is told (IdempotencyKey.Done). A store writes it with the filing, in
	// one transaction, and refuses the filing with ErrKeyTakenOver when the
	// claim no longer holds the key; a store that cannot (the key and the
	// item in different containers) records it on the item (FiledUnder)
	// and settles the key right after.
	Key *IdempotencyKey
	Now time.Time
}

// FilesRecord reports whether the filing adds a bucket record: classified
// and pending captures do; misunderstood and unresolved ones stay in the
// Inbox only.
func (f Filing) FilesRecord() bool {
	return f.Status == StatusClassified || f.Status == StatusPending
}

// NewItem is the Inbox item a new capture's filing creates. It keeps the
// filing's classification whatever the status (a misunderstood capture's
// scores are worth keeping for tuning too) and links the bucket record
// when the filing adds one.
func (f Filing) NewItem() InboxItem {
	c := f.Classification
	it := InboxItem{
		ID:                 f.NewInboxID,
		UserID:             f.UserID,
		RawText:            f.RawText,
		Title:              f.Title,
		Source:             f.Source,
		Status:             f.Status,
		ClassificationMeta: &c,
		UpstreamThreadID:   f.UpstreamThreadID,
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
	if f.Key != nil && f.Key.Replay != nil {
		it.FiledUnder = &KeyRecord{Key: f.Key.Key, Replay: *f.Key.Replay}
	}
	return it
}

// Refile is before after the follow-up filing f. It is still the same
// capture, so it keeps its id, source (how the capture came in) and
// creation time, and its thread, follow-up count and agent run unless f
// gives new ones; the rest is f's, as in NewItem, and the follow-up claim,
// answered, is gone. Stores check CheckRefile first.
func (f Filing) Refile(before InboxItem) InboxItem {
	it := f.NewItem()
	it.ID = before.ID
	it.Source = before.Source
	it.CreatedAt = before.CreatedAt
	if it.UpstreamThreadID == "" {
		it.UpstreamThreadID = before.UpstreamThreadID
	}
	if it.FollowUpRounds == 0 {
		it.FollowUpRounds = before.FollowUpRounds
	}
	if it.AgentRun == nil && before.AgentRun != nil {
		r := *before.AgentRun
		it.AgentRun = &r
	}
	return it
}

// Recategorized is it after a person put it in bucket: classified by
// classifiedBy at now, its classification's scores and agent chain kept,
// and any follow-up claim dropped, as the person's choice wins over a
// follow-up in flight. Its record (FiledRecordID) is the store's to set.
func (it InboxItem) Recategorized(bucket, classifiedBy string, now time.Time) InboxItem {
	var c Classification
	if it.ClassificationMeta != nil {
		c = *it.ClassificationMeta
	}
	c.Bucket, c.ClassifiedBy, c.ClassifiedAt = bucket, classifiedBy, now
	it.ClassificationMeta, it.Status, it.FollowUpClaim, it.UpdatedAt = &c, StatusClassified, nil, now
	return it
}

// Record is the bucket record the item links to (FiledRecordID), created
// at createdAt: it repeats the item's text, title and classification, and
// links back to the item.
func (it InboxItem) Record(createdAt time.Time) BucketRecord {
	r := BucketRecord{
		ID:            it.FiledRecordID,
		UserID:        it.UserID,
		RawText:       it.RawText,
		Title:         it.Title,
		InboxRecordID: it.ID,
		CreatedAt:     createdAt,
	}
	if it.ClassificationMeta != nil {
		// A copy, so that changing one document's classification does not
		// change the other's.
		c := *it.ClassificationMeta
		r.Bucket = c.Bucket
		r.ClassificationMeta = &c
	}
	return r
}

// ListOptions selects a page of a user's inbox, newest first.
type ListOptions struct {
	Status string // optional filter
	Limit  int    // page size; see PageSize
	Cursor string // opaque, from the previous page's NextCursor
}

// InboxPage is one page of inbox items.
type InboxPage struct {
	Items      []InboxItem
	NextCursor string // empty on the last page
}

// Store keeps captures. Every method is scoped to one user: a user never
// sees or changes another's documents (ENotFound, as if absent).
type Store interface {
	// File writes a filing atomically: afterwards either every document it
	// names exists and links to the others, or none was written or changed.
	File(ctx context.Context, f Filing) (InboxItem, error)
	GetInboxItem(ctx context.Context, userID, id string) (InboxItem, error)
	ListInbox(ctx context.Context, userID string, opts ListOptions) (InboxPage, error)
	// DeleteInboxItem removes the item and its bucket record, if any.
	DeleteInboxItem(ctx context.Context, userID, id string) error
	// Recategorize moves the item's bucket record to another bucket (creating
	// one with id newRecordID if the item had none) and marks it classified
	// by classifiedBy. The person's choice wins over a follow-up in flight:
	// the item's follow-up claim is dropped, and that follow-up's filing is
	// then refused (Filing.CheckRefile).
	Recategorize(ctx context.Context, userID, id, bucket, newRecordID, classifiedBy string, now time.Time) (InboxItem, error)
	// ClaimFollowUp reserves a follow-up round of a misunderstood item for
	// one run (see FollowUpClaim), atomically: of any number of concurrent
	// claims on an item, from any number of processes, exactly one
	// succeeds. It returns the item as claimed, EConflict for the reasons
	// InboxItem.Claim gives (another claim stands, not the next round, not
	// misunderstood...) and ENotFound for an unknown item.
	ClaimFollowUp(ctx context.Context, userID, id string, c FollowUpClaim) (InboxItem, error)
	// ReleaseFollowUp gives back the claim named token when its run ended
	// without filing, so that the round can be tried again. An item that no
	// longer holds that claim (filed, lapsed and taken, recategorized) or no
	// longer exists is left as it is, without error.
	ReleaseFollowUp(ctx context.Context, userID, id, token string) error
	GetBucketRecord(ctx context.Context, userID, bucket, id string) (BucketRecord, error)
	// Ping checks that the store is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// UserLister is implemented by stores that can list the users who have
// inbox items, for work across users (brainwire export-labels).
type UserLister interface {
	ListUsers(ctx context.Context) ([]string, error)
}

// Page sizes of ListInbox, the same on every store.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// PageSize checks the options and returns the page size to use: 0 means
// DefaultPageSize and larger values are cut to MaxPageSize.
func (o ListOptions) PageSize() (int, error) {
	if o.Status != "" && !ValidStatus(o.Status) {
		return 0, Errorf(EInvalid, "invalid status %q", o.Status)
	}
	switch {
	case o.Limit < 0:
		return 0, Errorf(EInvalid, "invalid page size %d", o.Limit)
	case o.Limit == 0:
		return DefaultPageSize, nil
	case o.Limit > MaxPageSize:
		return MaxPageSize, nil
	}
	return o.Limit, nil
}

// Validate checks a filing before a store writes anything: EInvalid for a
// missing user, time or id, an unknown status or source, a bucket that a
// classified or pending filing needs (or an unresolved one has), an
// unresolved refile, or numbers JSON cannot hold.
func (f Filing) Validate() error {
	if f.UserID == "" {
		return Errorf(EInvalid, "missing user id")
	}
	if f.Now.IsZero() {
		return Errorf(EInvalid, "missing filing time")
	}
	b := f.Classification.Bucket
	switch f.Status {
	case StatusClassified, StatusPending:
		if !ValidBucket(b) {
			return Errorf(EInvalid, "unknown bucket %q", b)
		}
		if f.NewRecordID == "" {
			return Errorf(EInvalid, "missing bucket record id")
		}
	case StatusMisunderstood:
		if b != "" && !ValidBucket(b) {
			return Errorf(EInvalid, "unknown bucket %q", b)
		}
	case StatusUnresolved:
		// Nothing decided a bucket; and a follow-up that ends unresolved
		// leaves its item as it was instead of refiling it.
		if b != "" {
			return Errorf(EInvalid, "an unresolved capture has no bucket, not %q", b)
		}
		if f.InboxItemID != "" {
			return Errorf(EInvalid, "an unresolved capture is kept as a new item, not refiled onto %s", f.InboxItemID)
		}
	default:
		return Errorf(EInvalid, "unknown status %q", f.Status)
	}
	if f.InboxItemID == "" {
		// A refile keeps the item's id and source; a new capture needs both.
		if f.NewInboxID == "" {
			return Errorf(EInvalid, "missing inbox item id")
		}
		if f.Source != KindText && f.Source != KindVoice {
			return Errorf(EInvalid, "unknown source %q", f.Source)
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !finite(f.Classification.Confidence) {
		return Errorf(EInvalid, "confidence is not a number")
	}
	for b, x := range f.Classification.AllScores {
		if !finite(x) {
			return Errorf(EInvalid, "score of %q is not a number", b)
		}
	}
	if f.AgentRun != nil && !finite(f.AgentRun.Confidence) {
		return Errorf(EInvalid, "the agent run's confidence is not a number")
	}
	if k := f.Key; k != nil {
		if err := k.Validate(); err != nil {
			return err
		}
		if k.State != KeyDone || k.UserID != f.UserID {
			return Errorf(EInvalid, "a filing settles its own user's idempotency key as done")
		}
	}
	return nil
}
