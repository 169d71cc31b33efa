package cosmos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// cursor is the position after the last item of a page. ListInbox pages
// with a keyset (createdAt, id) rather than Cosmos DB continuation tokens:
// it works the same on the service and the emulator, stays small, and does
// not expire or depend on the query's internal plan.
type cursor struct {
	CreatedAt string `json:"t"`
	ID        string `json:"i"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // two strings: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	var t time.Time
	if err == nil {
		t, err = time.Parse(timeLayout, c.CreatedAt)
	}
	// Only the one spelling stored times have: the query compares them as
	// strings, and time.Parse also takes e.g. a comma before the fraction.
	if err != nil || c.ID == "" || stamp(t).String() != c.CreatedAt {
		return cursor{}, brainwire.Errorf(brainwire.EInvalid, "invalid cursor")
	}
	return c, nil
}

// ListInbox returns a page of the user's Inbox items, newest first.
func (s *Store) ListInbox(ctx context.Context, userID string, opts brainwire.ListOptions) (brainwire.InboxPage, error) {
	limit, err := opts.PageSize()
	if err != nil {
		return brainwire.InboxPage{}, err
	}
	if userID == "" {
		return brainwire.InboxPage{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}

	// The userId condition is redundant with the partition key on the
	// service but keeps the query correct wherever the partition key
	// header is not honoured (the test emulator ignores it on queries).
	where := []string{"c.userId = @userId"}
	params := []azcosmos.QueryParameter{{Name: "@userId", Value: userID}}
	if opts.Status != "" {
		where = append(where, "c.status = @status")
		params = append(params, azcosmos.QueryParameter{Name: "@status", Value: opts.Status})
	}
	if opts.Cursor != "" {
		c, err := decodeCursor(opts.Cursor)
		if err != nil {
			return brainwire.InboxPage{}, err
		}
		where = append(where, "(c.createdAt < @afterTime OR (c.createdAt = @afterTime AND c.id < @afterID))")
		params = append(params,
			azcosmos.QueryParameter{Name: "@afterTime", Value: c.CreatedAt},
			azcosmos.QueryParameter{Name: "@afterID", Value: c.ID})
	}
	// One extra item tells whether there is a next page.
	query := fmt.Sprintf("SELECT TOP %d * FROM c WHERE %s ORDER BY c.createdAt DESC, c.id DESC",
		limit+1, strings.Join(where, " AND "))

	pager := s.inbox.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString(userID), &azcosmos.QueryOptions{
		QueryParameters: params,
		PageSizeHint:    int32(limit + 1),
	})
	items := make([]brainwire.InboxItem, 0, limit+1)
	// The service may return a short page before the end: keep reading.
	for pager.More() && len(items) <= limit {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return brainwire.InboxPage{}, listError(err)
		}
		for _, raw := range resp.Items {
			d, err := decode[inboxDoc]("inbox item", raw)
			if err != nil {
				return brainwire.InboxPage{}, err
			}
			items = append(items, d.item())
		}
	}
	page := brainwire.InboxPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.NextCursor = encodeCursor(cursor{CreatedAt: stamp(last.CreatedAt).String(), ID: last.ID})
	}
	return page, nil
}

// ListUsers returns the users who have Inbox items, in order
// (brainwire.UserLister). It reads every item's userId across partitions
// (the gateway serves no DISTINCT across partitions), so it is for exports,
// not for the request path.
func (s *Store) ListUsers(ctx context.Context) ([]string, error) {
	pager := s.inbox.NewQueryItemsPager("SELECT VALUE c.userId FROM c", azcosmos.NewPartitionKey(), nil)
	var users []string
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return nil, opErr("listing users", "inbox", err)
		}
		for _, raw := range resp.Items {
			u, err := decode[string]("user id", raw)
			if err != nil {
				return nil, err
			}
			if u != "" {
				users = append(users, u)
			}
		}
	}
	slices.Sort(users)
	return slices.Compact(users), nil
}
