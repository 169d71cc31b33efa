package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// ErrNotSetUp is in the chain of CheckSetup's error when the database
// lacks something the store needs: the server cannot work until it is
// added, and the error says how.
var ErrNotSetUp = errors.New("the Cosmos DB database is not set up for brainwire")

// CheckSetup checks, without changing anything, that the database and its
// containers (the keys container last: databases set up before it lack
// it) exist and that the Inbox container has the composite index
// ListInbox's ORDER BY needs. A database created by hand or by another
// program (five containers on /userId with the default indexing policy)
// lacks that index, and every inbox listing would fail; the error then
// says exactly what to run. An error without ErrNotSetUp in its chain
// means the check itself could not be made (network, credentials).
func (s *Store) CheckSetup(ctx context.Context) error {
	if _, err := s.db.Read(ctx, nil); err != nil {
		if statusOf(err) == http.StatusNotFound {
			return fmt.Errorf("%w: database %q does not exist: run `brainwire serve -init-db` once to create it and its containers", ErrNotSetUp, s.dbName)
		}
		return opErr("reading database "+s.dbName, "the store", err)
	}
	var missing []string
	var inbox *azcosmos.ContainerProperties
	for _, c := range s.containers() {
		resp, err := c.Read(ctx, nil)
		switch {
		case statusOf(err) == http.StatusNotFound:
			missing = append(missing, c.ID())
		case err != nil:
			return opErr("reading container "+c.ID()+" in database "+s.dbName, "the store", err)
		case c == s.inbox:
			inbox = resp.ContainerProperties
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: database %q has no container %s: run `brainwire serve -init-db` once to create what is missing",
			ErrNotSetUp, s.dbName, strings.Join(missing, ", "))
	}
	if inbox == nil {
		return opErr("reading container "+InboxContainer, "the store", errors.New("no properties returned"))
	}
	policy, changed := withInboxIndexes(inbox.IndexingPolicy)
	if !changed {
		return s.checkKeysContainer(ctx)
	}
	idx, err := json.Marshal(policy)
	if err != nil {
		return fmt.Errorf("cosmos: encoding the indexing policy: %w", err)
	}
	return fmt.Errorf("%w: the %s container of database %q has no composite index on (createdAt descending, id descending), "+
		"which listing the inbox needs. Run `brainwire serve -init-db` once (it adds the index to the existing container and "+
		"changes nothing else), or with the Azure CLI: az cosmosdb sql container update --resource-group <resource-group> "+
		"--account-name %s --database-name %s --name %s --idx '%s'",
		ErrNotSetUp, InboxContainer, s.dbName, s.accountName(), s.dbName, InboxContainer, idx)
}

// checkKeysContainer checks that the container of idempotency keys, which
// databases set up before them lack, exists.
func (s *Store) checkKeysContainer(ctx context.Context) error {
	_, err := s.keys.Read(ctx, nil)
	switch {
	case statusOf(err) == http.StatusNotFound:
		return fmt.Errorf("%w: database %q has no container %s (idempotency keys): run `brainwire serve -init-db` once to create it",
			ErrNotSetUp, s.dbName, KeysContainer)
	case err != nil:
		return opErr("reading container "+KeysContainer+" in database "+s.dbName, "the store", err)
	}
	return nil
}

// withInboxIndexes returns policy with the composite indexes ListInbox
// needs added, and whether any was missing. A policy that names no paths
// (none at all, or the bare one the test emulator reports) is the
// service's default: automatic, consistent, every path.
func withInboxIndexes(policy *azcosmos.IndexingPolicy) (*azcosmos.IndexingPolicy, bool) {
	var p azcosmos.IndexingPolicy
	if policy != nil {
		p = *policy
		p.CompositeIndexes = append([][]azcosmos.CompositeIndex(nil), policy.CompositeIndexes...)
	}
	if len(p.IncludedPaths) == 0 && len(p.ExcludedPaths) == 0 {
		p.Automatic = true
		p.IncludedPaths = []azcosmos.IncludedPath{{Path: "/*"}}
		if p.IndexingMode == "" {
			p.IndexingMode = azcosmos.IndexingModeConsistent
		}
	}
	changed := false
	for _, want := range inboxIndexes() {
		if !hasCompositeIndex(p.CompositeIndexes, want) {
			p.CompositeIndexes = append(p.CompositeIndexes, want)
			changed = true
		}
	}
	return &p, changed
}

func hasCompositeIndex(have [][]azcosmos.CompositeIndex, want []azcosmos.CompositeIndex) bool {
	return slices.ContainsFunc(have, func(h []azcosmos.CompositeIndex) bool { return slices.Equal(h, want) })
}

// accountName is the account's name as the Azure CLI wants it: the first
// label of the endpoint's host (https://<account>.documents.azure.com).
func (s *Store) accountName() string {
	u, err := url.Parse(s.client.Endpoint())
	if err != nil || u.Hostname() == "" || !strings.Contains(u.Hostname(), ".") {
		return "<account>"
	}
	return strings.SplitN(u.Hostname(), ".", 2)[0]
}

// listError explains a failed ListInbox.
func listError(err error) error {
	if statusOf(err) == http.StatusBadRequest {
		// The caller's values are all parameters: a rejected query is this
		// package's fault or, most likely, an Inbox container without its
		// composite index (CheckSetup says what to run).
		return &opError{doing: "listing inbox (is the Inbox container's composite index on createdAt, id missing? run `brainwire serve -init-db`)",
			app: brainwire.Errorf(brainwire.EInternal, "internal error"), cause: err}
	}
	return opErr("listing inbox", "inbox", err)
}
