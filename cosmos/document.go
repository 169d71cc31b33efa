package cosmos

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
)

// The stored documents mirror brainwire.InboxItem, BucketRecord and
// Classification field for field, with the same JSON names (a test holds
// them together). They differ only in how times are written.

// timeLayout is RFC 3339 in UTC with all nine fractional digits. Cosmos DB
// compares strings lexically, and only a fixed-width UTC form sorts in
// time order ("…:05Z" sorts after "…:05.1Z" in time.Time's own form), which
// ListInbox's ORDER BY and keyset cursor rely on.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// stamp is a time.Time stored in timeLayout.
type stamp time.Time

func (s stamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Time(s).UTC().Format(timeLayout))
}

func (s *stamp) UnmarshalJSON(b []byte) error {
	var t time.Time
	if err := t.UnmarshalJSON(b); err != nil {
		return err
	}
	*s = stamp(t.UTC())
	return nil
}

func (s stamp) String() string { return time.Time(s).UTC().Format(timeLayout) }

// time returns the stored time, in UTC as every read returns it.
func (s stamp) time() time.Time { return time.Time(s).UTC() }

type classDoc struct {
	Bucket       string             `json:"bucket"`
	Confidence   float64            `json:"confidence"`
	AllScores    map[string]float64 `json:"allScores,omitempty"`
	ClassifiedBy string             `json:"classifiedBy"`
	AgentChain   []string           `json:"agentChain,omitempty"`
	ClassifiedAt stamp              `json:"classifiedAt"`
}

type inboxDoc struct {
	ID                 string                `json:"id"`
	UserID             string                `json:"userId"`
	RawText            string                `json:"rawText"`
	Title              string                `json:"title"`
	Source             brainwire.CaptureKind `json:"source"`
	Status             string                `json:"status"`
	ClassificationMeta *classDoc             `json:"classificationMeta"`
	FiledRecordID      string                `json:"filedRecordId"`
	UpstreamThreadID   string                `json:"foundryThreadId"`
	FollowUpRounds     int                   `json:"followUpRounds"`
	AgentRun           *brainwire.AgentRun   `json:"agentRun,omitempty"`
	FollowUpClaim      *claimDoc             `json:"followUpClaim,omitempty"`
	FiledUnder         *brainwire.KeyRecord  `json:"filedUnder,omitempty"`
	CreatedAt          stamp                 `json:"createdAt"`
	UpdatedAt          stamp                 `json:"updatedAt"`
}

// claimDoc is a follow-up claim (brainwire.FollowUpClaim) as the Inbox
// item holds it while its round is being answered.
type claimDoc struct {
	Round int    `json:"round"`
	Token string `json:"token"`
	At    stamp  `json:"at"`
	Until stamp  `json:"until"`
}

func toClaimDoc(c *brainwire.FollowUpClaim) *claimDoc {
	if c == nil {
		return nil
	}
	return &claimDoc{Round: c.Round, Token: c.Token, At: stamp(c.At), Until: stamp(c.Until)}
}

func (d *claimDoc) claim() *brainwire.FollowUpClaim {
	if d == nil {
		return nil
	}
	return &brainwire.FollowUpClaim{Round: d.Round, Token: d.Token, At: d.At.time(), Until: d.Until.time()}
}

type bucketDoc struct {
	ID                 string    `json:"id"`
	UserID             string    `json:"userId"`
	RawText            string    `json:"rawText"`
	Title              string    `json:"title"`
	ClassificationMeta *classDoc `json:"classificationMeta"`
	InboxRecordID      string    `json:"inboxRecordId"`
	CreatedAt          stamp     `json:"createdAt"`
}

func toClassDoc(c *brainwire.Classification) *classDoc {
	if c == nil {
		return nil
	}
	return &classDoc{
		Bucket:       c.Bucket,
		Confidence:   c.Confidence,
		AllScores:    c.AllScores,
		ClassifiedBy: c.ClassifiedBy,
		AgentChain:   c.AgentChain,
		ClassifiedAt: stamp(c.ClassifiedAt),
	}
}

func (d *classDoc) classification() *brainwire.Classification {
	if d == nil {
		return nil
	}
	return &brainwire.Classification{
		Bucket:       d.Bucket,
		Confidence:   d.Confidence,
		AllScores:    d.AllScores,
		ClassifiedBy: d.ClassifiedBy,
		AgentChain:   d.AgentChain,
		ClassifiedAt: d.ClassifiedAt.time(),
	}
}

func toInboxDoc(it brainwire.InboxItem) inboxDoc {
	return inboxDoc{
		ID:                 it.ID,
		UserID:             it.UserID,
		RawText:            it.RawText,
		Title:              it.Title,
		Source:             it.Source,
		Status:             it.Status,
		ClassificationMeta: toClassDoc(it.ClassificationMeta),
		FiledRecordID:      it.FiledRecordID,
		UpstreamThreadID:   it.UpstreamThreadID,
		FollowUpRounds:     it.FollowUpRounds,
		AgentRun:           clone(it.AgentRun),
		FollowUpClaim:      toClaimDoc(it.FollowUpClaim),
		FiledUnder:         clone(it.FiledUnder),
		CreatedAt:          stamp(it.CreatedAt),
		UpdatedAt:          stamp(it.UpdatedAt),
	}
}

// clone copies what p points to, so that documents share no memory with
// the caller's items.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func (d inboxDoc) item() brainwire.InboxItem {
	return brainwire.InboxItem{
		ID:                 d.ID,
		UserID:             d.UserID,
		RawText:            d.RawText,
		Title:              d.Title,
		Source:             d.Source,
		Status:             d.Status,
		ClassificationMeta: d.ClassificationMeta.classification(),
		FiledRecordID:      d.FiledRecordID,
		UpstreamThreadID:   d.UpstreamThreadID,
		FollowUpRounds:     d.FollowUpRounds,
		AgentRun:           clone(d.AgentRun),
		FollowUpClaim:      d.FollowUpClaim.claim(),
		FiledUnder:         clone(d.FiledUnder),
		CreatedAt:          d.CreatedAt.time(),
		UpdatedAt:          d.UpdatedAt.time(),
	}
}

func toBucketDoc(r brainwire.BucketRecord) bucketDoc {
	return bucketDoc{
		ID:                 r.ID,
		UserID:             r.UserID,
		RawText:            r.RawText,
		Title:              r.Title,
		ClassificationMeta: toClassDoc(r.ClassificationMeta),
		InboxRecordID:      r.InboxRecordID,
		CreatedAt:          stamp(r.CreatedAt),
	}
}

func (d bucketDoc) record(bucket string) brainwire.BucketRecord {
	return brainwire.BucketRecord{
		ID:                 d.ID,
		UserID:             d.UserID,
		Bucket:             bucket,
		RawText:            d.RawText,
		Title:              d.Title,
		ClassificationMeta: d.ClassificationMeta.classification(),
		InboxRecordID:      d.InboxRecordID,
		CreatedAt:          d.CreatedAt.time(),
	}
}

// normalizeItem returns it as it reads back after being stored: times in
// UTC at the stored precision.
func normalizeItem(it brainwire.InboxItem) brainwire.InboxItem {
	return toInboxDoc(it).item()
}

// decode unmarshals a document read from the service.
func decode[T any](what string, b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("cosmos: decoding %s: %w", what, err)
	}
	return v, nil
}

// validID reports whether id can name a Cosmos DB document: non-empty, at
// most 255 characters and none of the characters the service forbids in
// ids (they are path separators in its REST API).
func validID(id string) bool {
	return id != "" && len(id) <= 255 && !strings.ContainsAny(id, `/\?#`) &&
		strings.TrimSpace(id) == id
}
