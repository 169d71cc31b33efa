// Package cosmos is the production brainwire.Store, on Azure Cosmos DB.
//
// Every capture has a document in the Inbox container; classified and
// pending captures also have one in their bucket's container (People,
// Projects, Ideas or Admin), linked both ways. All containers are
// partitioned by /userId, so every read, write and query stays inside one
// user's partition.
//
// Cosmos DB has no transaction across containers, so writes that touch two
// containers are ordered and compensated: the bucket record is written
// first and removed again if the Inbox write fails, and the Inbox item is
// replaced only if it has not changed since it was read (ETag match).
package cosmos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// DefaultDatabase is the database used when Config.Database is empty.
const DefaultDatabase = "second-brain"

// InboxContainer is the container holding every capture's Inbox item. The
// bucket containers are named after the buckets (brainwire.Buckets).
const InboxContainer = "Inbox"

// PartitionKeyPath is the partition key of every container.
const PartitionKeyPath = "/userId"

// compensationTimeout bounds the writes that undo a failed operation. They
// run detached from the caller's context: a cancelled request is a common
// reason for the failure, and must not also stop the cleanup.
const compensationTimeout = 15 * time.Second

// Config says which Cosmos DB account and database to use.
type Config struct {
	// Endpoint is the account URL, e.g. https://<account>.documents.azure.com:443/.
	Endpoint string
	// Key is the account key. When set it is used instead of Credential.
	Key string
	// Credential authenticates with Microsoft Entra ID when Key is empty
	// (typically azidentity.DefaultAzureCredential).
	Credential azcore.TokenCredential
	// Database is the database name; DefaultDatabase when empty.
	Database string
	// ClientOptions are passed to the azcosmos client (transport, retries,
	// tracing, preferred regions). Optional.
	ClientOptions *azcosmos.ClientOptions
	// Logger receives failures that leave a stray, unlinked bucket record
	// behind after an otherwise successful operation. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Store is a brainwire.Store on Cosmos DB. It is safe for concurrent use.
type Store struct {
	client     *azcosmos.Client
	db         *azcosmos.DatabaseClient
	dbName     string
	inbox      *azcosmos.ContainerClient
	buckets    map[string]*azcosmos.ContainerClient
	keys       *azcosmos.ContainerClient // idempotency keys
	log        *slog.Logger
	compensate time.Duration
}

var _ brainwire.Store = (*Store)(nil)

// Open creates the Cosmos DB client. It does not contact the service: use
// Ping to check it is reachable and EnsureContainers to create what is
// missing.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("cosmos: open: no endpoint configured")
	}
	var (
		client *azcosmos.Client
		err    error
	)
	switch {
	case cfg.Key != "":
		cred, kerr := azcosmos.NewKeyCredential(cfg.Key)
		if kerr != nil {
			return nil, fmt.Errorf("cosmos: open: parsing account key: %w", kerr)
		}
		client, err = azcosmos.NewClientWithKey(cfg.Endpoint, cred, cfg.ClientOptions)
	case cfg.Credential != nil:
		client, err = azcosmos.NewClient(cfg.Endpoint, cfg.Credential, cfg.ClientOptions)
	default:
		return nil, errors.New("cosmos: open: neither an account key nor a token credential configured")
	}
	if err != nil {
		return nil, fmt.Errorf("cosmos: open: creating client for %s: %w", cfg.Endpoint, err)
	}
	name := cmp.Or(cfg.Database, DefaultDatabase)
	db, err := client.NewDatabase(name)
	if err != nil {
		return nil, fmt.Errorf("cosmos: open: database %s: %w", name, err)
	}
	s := &Store{client: client, db: db, dbName: name, buckets: map[string]*azcosmos.ContainerClient{},
		log: cmp.Or(cfg.Logger, slog.Default()), compensate: compensationTimeout}
	for _, c := range append(containerNames(), KeysContainer) {
		if s.buckets[c], err = db.NewContainer(c); err != nil {
			return nil, fmt.Errorf("cosmos: open: container %s: %w", c, err)
		}
	}
	s.inbox, s.keys = s.buckets[InboxContainer], s.buckets[KeysContainer]
	delete(s.buckets, InboxContainer)
	delete(s.buckets, KeysContainer)
	return s, nil
}

// Database returns the name of the database the store uses.
func (s *Store) Database() string { return s.dbName }

// containerNames lists the containers holding the captures; the store
// also uses KeysContainer.
func containerNames() []string {
	return append([]string{InboxContainer}, brainwire.Buckets...)
}

// inboxIndexes are the composite indexes ListInbox's ORDER BY needs: Cosmos
// DB refuses an ORDER BY on two properties without a matching one.
func inboxIndexes() [][]azcosmos.CompositeIndex {
	return [][]azcosmos.CompositeIndex{{
		{Path: "/createdAt", Order: azcosmos.CompositeIndexDescending},
		{Path: "/id", Order: azcosmos.CompositeIndexDescending},
	}}
}

// EnsureContainers creates the database and its containers when they are
// missing, adds the Inbox's composite index to an existing Inbox that
// lacks it, and turns on the TTL of a keys container that has it off. It is idempotent. Throughput is left to the account (serverless
// accounts reject any setting).
func (s *Store) EnsureContainers(ctx context.Context) error {
	_, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: s.dbName}, nil)
	if err != nil && statusOf(err) != http.StatusConflict {
		return fmt.Errorf("cosmos: creating database %s: %w", s.dbName, err)
	}
	for _, name := range append(containerNames(), KeysContainer) {
		props := azcosmos.ContainerProperties{
			ID: name,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
				Paths: []string{PartitionKeyPath},
			},
		}
		if name == InboxContainer {
			props.IndexingPolicy = &azcosmos.IndexingPolicy{
				Automatic:        true,
				IndexingMode:     azcosmos.IndexingModeConsistent,
				IncludedPaths:    []azcosmos.IncludedPath{{Path: "/*"}},
				ExcludedPaths:    []azcosmos.ExcludedPath{{Path: `/"_etag"/?`}},
				CompositeIndexes: inboxIndexes(),
			}
		}
		if name == KeysContainer {
			props.DefaultTimeToLive = keysDefaultTTL()
		}
		_, err := s.db.CreateContainer(ctx, props, nil)
		switch {
		case err == nil:
			continue
		case statusOf(err) != http.StatusConflict:
			return fmt.Errorf("cosmos: creating container %s in %s: %w", name, s.dbName, err)
		case name == InboxContainer:
			// The composite index ListInbox needs, on an Inbox created
			// without it.
			err := amendContainer(ctx, s.inbox, name, "adding the composite index", func(p *azcosmos.ContainerProperties) bool {
				policy, missing := withInboxIndexes(p.IndexingPolicy)
				p.IndexingPolicy = policy
				return missing
			})
			if err != nil {
				return err
			}
		case name == KeysContainer:
			// TTL on, with no default expiry (each document's own ttl
			// counts), on a keys container created without.
			err := amendContainer(ctx, s.keys, name, "turning on the TTL", func(p *azcosmos.ContainerProperties) bool {
				if p.DefaultTimeToLive != nil {
					return false
				}
				p.DefaultTimeToLive = keysDefaultTTL()
				return true
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// amendContainer reads a container's properties and replaces them when
// change changed them: for what a container made by an older version
// lacks.
func amendContainer(ctx context.Context, c *azcosmos.ContainerClient, name, what string, change func(*azcosmos.ContainerProperties) bool) error {
	resp, err := c.Read(ctx, nil)
	if err != nil {
		return fmt.Errorf("cosmos: reading container %s: %w", name, err)
	}
	props := resp.ContainerProperties
	if props == nil {
		return fmt.Errorf("cosmos: reading container %s: no properties returned", name)
	}
	if !change(props) {
		return nil
	}
	if _, err := c.Replace(ctx, *props, nil); err != nil {
		return fmt.Errorf("cosmos: container %s: %s: %w", name, what, err)
	}
	return nil
}

// Ping checks that the database and its containers can be read. A missing
// database or container is reported as EUnavailable: the store cannot work
// until it is created (EnsureContainers).
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.db.Read(ctx, nil); err != nil {
		return pingErr("database "+s.dbName, err)
	}
	for _, c := range append(s.containers(), s.keys) {
		if _, err := c.Read(ctx, nil); err != nil {
			return pingErr("container "+c.ID()+" in database "+s.dbName, err)
		}
	}
	return nil
}

func pingErr(what string, err error) error {
	if statusOf(err) == http.StatusNotFound {
		return &opError{
			doing: "reading " + what,
			app:   brainwire.Errorf(brainwire.EUnavailable, "the store's %s does not exist (create it with -init-db)", what),
			cause: err,
		}
	}
	return opErr("reading "+what, "the store", err)
}

// containers are the containers holding the captures, Inbox first.
func (s *Store) containers() []*azcosmos.ContainerClient {
	out := []*azcosmos.ContainerClient{s.inbox}
	for _, b := range brainwire.Buckets {
		out = append(out, s.buckets[b])
	}
	return out
}

// Close releases nothing: the azcosmos client holds no resources of its own
// beyond pooled HTTP connections.
func (s *Store) Close() error { return nil }

// detached returns a context for compensating writes: it keeps ctx's values
// (trace spans) but not its cancellation, and has its own deadline.
func (s *Store) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.compensate)
}

// Kind names the backend in health reports.
func (s *Store) Kind() string { return "cosmos" }
