package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
)

// WrapStore returns a store whose every operation is a client span
// ("store.file", "store.get_inbox_item", ...) under the span in its
// context: a file_capture's writes appear under its execute_tool span.
// The wrapper names the same Kind as st, when st has one.
func (t *Telemetry) WrapStore(st brainwire.Store) brainwire.Store {
	if st == nil {
		return nil
	}
	s := &store{t: t, next: st}
	if k, ok := st.(interface{ Kind() string }); ok {
		s.kind = k.Kind()
	}
	switch s.kind {
	case "sqlite":
		s.system = semconv.DBSystemNameSQLite
	case "cosmos":
		s.system = semconv.DBSystemNameAzureCosmosDB
	default:
		s.system = semconv.DBSystemNameKey.String(s.kind)
		if s.kind == "" {
			s.system = semconv.DBSystemNameOtherSQL
		}
	}
	return s
}

type store struct {
	t      *Telemetry
	next   brainwire.Store
	kind   string
	system attribute.KeyValue
}

// Kind names the wrapped store, for health reports.
func (s *store) Kind() string { return s.kind }

// start opens an operation's span; the end it returns closes it with
// the operation's error, which it passes on. A missing document is an
// answer, not a failure, so it only gets its error.type.
func (s *store) start(ctx context.Context, op string, kv ...attribute.KeyValue) (context.Context, trace.Span, func(error) error) {
	var span trace.Span
	if s.t.tracing {
		attrs := append([]attribute.KeyValue{s.system, semconv.DBOperationName(op)}, kv...)
		ctx, span = s.t.tracer.Start(ctx, "store."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	} else {
		ctx, span = s.t.tracer.Start(ctx, "store."+op)
	}
	return ctx, span, func(err error) error {
		if err != nil {
			code := brainwire.ErrorCode(err)
			switch {
			case errors.Is(err, context.Canceled):
				code = "canceled"
			case errors.Is(err, context.DeadlineExceeded):
				code = "timeout"
			}
			span.SetAttributes(semconv.ErrorTypeKey.String(code))
			if code != brainwire.ENotFound {
				span.SetStatus(codes.Error, brainwire.ErrorMessage(err))
			}
		}
		span.End()
		return err
	}
}

func (s *store) File(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	kv := []attribute.KeyValue{attribute.String("brainwire.filing.status", f.Status)}
	if f.Classification.Bucket != "" {
		kv = append(kv, AttrBucket.String(f.Classification.Bucket))
	}
	if f.InboxItemID != "" {
		kv = append(kv, AttrInboxItemID.String(f.InboxItemID))
	}
	ctx, span, end := s.start(ctx, "file", kv...)
	item, err := s.next.File(ctx, f)
	if err == nil && f.InboxItemID == "" {
		span.SetAttributes(AttrInboxItemID.String(item.ID))
	}
	end(err)
	return item, err
}

func (s *store) GetInboxItem(ctx context.Context, userID, id string) (brainwire.InboxItem, error) {
	ctx, _, end := s.start(ctx, "get_inbox_item", AttrInboxItemID.String(id))
	item, err := s.next.GetInboxItem(ctx, userID, id)
	return item, end(err)
}

func (s *store) ListInbox(ctx context.Context, userID string, opts brainwire.ListOptions) (brainwire.InboxPage, error) {
	ctx, span, end := s.start(ctx, "list_inbox")
	page, err := s.next.ListInbox(ctx, userID, opts)
	if err == nil {
		span.SetAttributes(attribute.Int("db.response.returned_rows", len(page.Items)))
	}
	end(err)
	return page, err
}

func (s *store) DeleteInboxItem(ctx context.Context, userID, id string) error {
	ctx, _, end := s.start(ctx, "delete_inbox_item", AttrInboxItemID.String(id))
	return end(s.next.DeleteInboxItem(ctx, userID, id))
}

func (s *store) Recategorize(ctx context.Context, userID, id, bucket, newRecordID, classifiedBy string, now time.Time) (brainwire.InboxItem, error) {
	ctx, _, end := s.start(ctx, "recategorize", AttrInboxItemID.String(id), AttrBucket.String(bucket))
	item, err := s.next.Recategorize(ctx, userID, id, bucket, newRecordID, classifiedBy, now)
	return item, end(err)
}

func (s *store) ClaimFollowUp(ctx context.Context, userID, id string, c brainwire.FollowUpClaim) (brainwire.InboxItem, error) {
	ctx, _, end := s.start(ctx, "claim_follow_up", AttrInboxItemID.String(id), attribute.Int("brainwire.follow_up.round", c.Round))
	item, err := s.next.ClaimFollowUp(ctx, userID, id, c)
	return item, end(err)
}

func (s *store) ReleaseFollowUp(ctx context.Context, userID, id, token string) error {
	ctx, _, end := s.start(ctx, "release_follow_up", AttrInboxItemID.String(id))
	return end(s.next.ReleaseFollowUp(ctx, userID, id, token))
}

func (s *store) GetBucketRecord(ctx context.Context, userID, bucket, id string) (brainwire.BucketRecord, error) {
	ctx, _, end := s.start(ctx, "get_bucket_record", AttrBucket.String(bucket))
	rec, err := s.next.GetBucketRecord(ctx, userID, bucket, id)
	return rec, end(err)
}

func (s *store) Ping(ctx context.Context) error {
	ctx, _, end := s.start(ctx, "ping")
	return end(s.next.Ping(ctx))
}

func (s *store) Close() error { return s.next.Close() }

var _ brainwire.IdempotencyStore = (*store)(nil)

// errNoKeys answers for a wrapped store that keeps no idempotency keys.
var errNoKeys = brainwire.Errorf(brainwire.EUnavailable, "the store keeps no idempotency keys")

func (s *store) ClaimKey(ctx context.Context, k brainwire.IdempotencyKey) (brainwire.IdempotencyKey, bool, error) {
	ks, ok := s.next.(brainwire.IdempotencyStore)
	if !ok {
		return brainwire.IdempotencyKey{}, false, errNoKeys
	}
	ctx, span, end := s.start(ctx, "claim_idempotency_key")
	got, claimed, err := ks.ClaimKey(ctx, k)
	if err == nil {
		span.SetAttributes(attribute.Bool("brainwire.idempotency_key.claimed", claimed))
	}
	end(err)
	return got, claimed, err
}

func (s *store) FinishKey(ctx context.Context, k brainwire.IdempotencyKey) error {
	ks, ok := s.next.(brainwire.IdempotencyStore)
	if !ok {
		return errNoKeys
	}
	ctx, _, end := s.start(ctx, "finish_idempotency_key")
	return end(ks.FinishKey(ctx, k))
}

func (s *store) ReleaseKey(ctx context.Context, userID, key, token string) error {
	ks, ok := s.next.(brainwire.IdempotencyStore)
	if !ok {
		return errNoKeys
	}
	ctx, _, end := s.start(ctx, "release_idempotency_key")
	return end(ks.ReleaseKey(ctx, userID, key, token))
}

var _ brainwire.ShadowStore = (*store)(nil)

// RecordShadow keeps a shadow trial on its item, when the wrapped store
// keeps them.
func (s *store) RecordShadow(ctx context.Context, userID, itemID string, t brainwire.ShadowTrial) error {
	ss, ok := s.next.(brainwire.ShadowStore)
	if !ok {
		return brainwire.Errorf(brainwire.EUnavailable, "the store keeps no shadow trials")
	}
	ctx, _, end := s.start(ctx, "record_shadow", AttrInboxItemID.String(itemID))
	return end(ss.RecordShadow(ctx, userID, itemID, t))
}
