package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// createLikeThePythonBackend creates the database the way the backend
// brainwire replaces did: the five containers on /userId, default indexing.
func createLikeThePythonBackend(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: s.dbName}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range containerNames() {
		_, err := s.db.CreateContainer(ctx, azcosmos.ContainerProperties{
			ID:                     name,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{PartitionKeyPath}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
}

func testCheckSetup(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{noEnsure: true})
	t.Cleanup(func() { _, _ = s.db.Delete(context.Background(), nil) })

	err := s.CheckSetup(ctx)
	if !errors.Is(err, ErrNotSetUp) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "serve -init-db") {
		t.Fatalf("no database: %v", err)
	}

	createLikeThePythonBackend(t, s)
	err = s.CheckSetup(ctx)
	if !errors.Is(err, ErrNotSetUp) {
		t.Fatalf("database without the composite index: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"Inbox", "composite index", "brainwire serve -init-db", "az cosmosdb sql container update",
		"--database-name " + s.dbName, "--name Inbox", "--account-name "} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	// The policy it prints is the container's own plus the index: what the
	// Azure CLI would set.
	m := regexp.MustCompile(`--idx '(.*)'`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no --idx policy in %s", msg)
	}
	var policy azcosmos.IndexingPolicy
	if err := json.Unmarshal([]byte(m[1]), &policy); err != nil || !hasCompositeIndex(policy.CompositeIndexes, inboxIndexes()[0]) ||
		len(policy.IncludedPaths) == 0 {
		t.Errorf("printed policy %s: %v", m[1], err)
	}
	// Listing fails there, as the service fails it, and the error says why.
	_, err = s.ListInbox(ctx, "alice", brainwire.ListOptions{})
	if brainwire.ErrorCode(err) != brainwire.EInternal || !strings.Contains(err.Error(), "composite index") {
		t.Errorf("ListInbox without the index: %v", err)
	}

	// EnsureContainers adds the index to the Inbox as it is, and listing
	// works.
	if err := s.EnsureContainers(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSetup(ctx); err != nil {
		t.Fatalf("after EnsureContainers: %v", err)
	}
	// Documents are filed only now: cosmosdb-server drops a container's
	// documents when the container is replaced (the service keeps them).
	g := &ids{}
	mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))
	mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime.Add(time.Second)))
	if page, err := s.ListInbox(ctx, "alice", brainwire.ListOptions{}); err != nil || len(page.Items) != 2 {
		t.Fatalf("ListInbox after EnsureContainers: %d items, %v; want 2", len(page.Items), err)
	}
}

func testCheckSetupMissingContainer(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{})
	if _, err := s.buckets[brainwire.BucketIdeas].Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	err := s.CheckSetup(ctx)
	if !errors.Is(err, ErrNotSetUp) || !strings.Contains(err.Error(), "no container Ideas") {
		t.Fatalf("missing container: %v", err)
	}
}

func testCheckSetupUnreachable(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	f.add(&fault{method: "GET", path: "/dbs/" + s.dbName, err: errInjected})
	err := s.CheckSetup(context.Background())
	if err == nil || errors.Is(err, ErrNotSetUp) {
		t.Fatalf("unreachable store: %v, want an error that is not ErrNotSetUp", err)
	}
}
