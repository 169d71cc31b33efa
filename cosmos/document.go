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

// The documents are the brainwire types' own JSON, but for their times,
// which are stamps; a follow-up claim, the key an item was filed under and
// its shadow trial are kept too, which the domain types leave out of their
// JSON.

type classDoc struct {
	brainwire.Classification
	ClassifiedAt stamp `json:"classifiedAt"`
}

type inboxDoc struct {
	brainwire.InboxItem
	ClassificationMeta *classDoc            `json:"classificationMeta"`
	FollowUpClaim      *claimDoc            `json:"followUpClaim,omitempty"`
	FiledUnder         *brainwire.KeyRecord `json:"filedUnder,omitempty"`
	Shadow             *shadowDoc           `json:"shadow,omitempty"`
	CreatedAt          stamp                `json:"createdAt"`
	UpdatedAt          stamp                `json:"updatedAt"`
}

// shadowDoc is a shadow trial (brainwire.ShadowTrial) as its item holds it.
type shadowDoc struct {
	brainwire.ShadowTrial
	At stamp `json:"at"`
}

// claimDoc is a follow-up claim (brainwire.FollowUpClaim) as the Inbox
// item holds it while its round is being answered.
type claimDoc struct {
	Round int    `json:"round"`
	Token string `json:"token"`
	At    stamp  `json:"at"`
	Until stamp  `json:"until"`
}

type bucketDoc struct {
	brainwire.BucketRecord
	ClassificationMeta *classDoc `json:"classificationMeta"`
	CreatedAt          stamp     `json:"createdAt"`
}

func toClassDoc(c *brainwire.Classification) *classDoc {
	if c == nil {
		return nil
	}
	return &classDoc{Classification: *c, ClassifiedAt: stamp(c.ClassifiedAt)}
}

func (d *classDoc) classification() *brainwire.Classification {
	if d == nil {
		return nil
	}
	c := d.Classification
	c.ClassifiedAt = d.ClassifiedAt.time()
	return &c
}

func toInboxDoc(it brainwire.InboxItem) inboxDoc {
	d := inboxDoc{InboxItem: it, ClassificationMeta: toClassDoc(it.ClassificationMeta), FiledUnder: clone(it.FiledUnder),
		CreatedAt: stamp(it.CreatedAt), UpdatedAt: stamp(it.UpdatedAt)}
	d.AgentRun = clone(it.AgentRun)
	if c := it.FollowUpClaim; c != nil {
		d.FollowUpClaim = &claimDoc{Round: c.Round, Token: c.Token, At: stamp(c.At), Until: stamp(c.Until)}
	}
	if t := it.Shadow; t != nil {
		d.Shadow = &shadowDoc{ShadowTrial: *t, At: stamp(t.At)}
	}
	return d
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
	it := d.InboxItem
	it.ClassificationMeta, it.AgentRun, it.FiledUnder = d.ClassificationMeta.classification(), clone(d.AgentRun), clone(d.FiledUnder)
	it.CreatedAt, it.UpdatedAt, it.FollowUpClaim = d.CreatedAt.time(), d.UpdatedAt.time(), nil
	if c := d.FollowUpClaim; c != nil {
		it.FollowUpClaim = &brainwire.FollowUpClaim{Round: c.Round, Token: c.Token, At: c.At.time(), Until: c.Until.time()}
	}
	it.Shadow = nil
	if d.Shadow != nil {
		t := d.Shadow.ShadowTrial
		t.At = d.Shadow.At.time()
		it.Shadow = &t
	}
	return it
}

func toBucketDoc(r brainwire.BucketRecord) bucketDoc {
	return bucketDoc{BucketRecord: r, ClassificationMeta: toClassDoc(r.ClassificationMeta), CreatedAt: stamp(r.CreatedAt)}
}

func (d bucketDoc) record(bucket string) brainwire.BucketRecord {
	r := d.BucketRecord
	r.Bucket, r.ClassificationMeta, r.CreatedAt = bucket, d.ClassificationMeta.classification(), d.CreatedAt.time()
	return r
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
