// Package azureblob keeps uploaded audio in an Azure Blob Storage container
// (or in Azurite, its local emulator).
package azureblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/brainwire/brainwire"
)

// Upload tuning used when Config leaves it zero: an upload holds at most
// about BlockSize*Concurrency bytes in memory.
const (
	DefaultBlockSize   = 1 << 20 // the SDK's minimum
	DefaultConcurrency = 2
)

// Config says which container to use and how to authenticate.
type Config struct {
	// AccountURL is the blob service endpoint, e.g.
	// https://<account>.blob.core.windows.net, or for Azurite
	// http://127.0.0.1:10000/devstoreaccount1.
	AccountURL string
	// Container holds the audio; EnsureContainer creates it.
	Container string

	// AccountName and AccountKey authenticate with the account's shared key.
	AccountName string
	AccountKey  string
	// TokenCredential authenticates with Microsoft Entra ID (for example
	// azidentity.DefaultAzureCredential) when no AccountKey is set. The SDK
	// sends tokens over https only.
	TokenCredential azcore.TokenCredential

	// HTTPClient sends the requests; nil uses the SDK's default transport.
	HTTPClient *http.Client
	// BlockSize and Concurrency bound an upload's memory; zero picks
	// DefaultBlockSize and DefaultConcurrency.
	BlockSize   int64
	Concurrency int
}

// Store is a brainwire.BlobStore on one Blob Storage container. It is safe
// for concurrent use.
type Store struct {
	container   *container.Client
	base        *url.URL // the container's URL, to recognise our blob URLs
	blockSize   int64
	concurrency int
}

var _ brainwire.BlobStore = (*Store)(nil)

// New returns a Store for cfg. It makes no request.
func New(cfg Config) (*Store, error) {
	base, err := containerURL(cfg.AccountURL, cfg.Container)
	if err != nil {
		return nil, err
	}
	opts := &container.ClientOptions{}
	if cfg.HTTPClient != nil {
		opts.Transport = cfg.HTTPClient
	}
	var c *container.Client
	switch {
	case cfg.AccountKey != "" && cfg.TokenCredential != nil:
		return nil, errors.New("azureblob: both an account key and a token credential are configured; choose one")
	case cfg.AccountKey != "":
		if cfg.AccountName == "" {
			return nil, errors.New("azureblob: an account key needs the account name")
		}
		cred, err := container.NewSharedKeyCredential(cfg.AccountName, cfg.AccountKey)
		if err != nil {
			return nil, fmt.Errorf("azureblob: reading the account key: %w", err)
		}
		c, err = container.NewClientWithSharedKeyCredential(base.String(), cred, opts)
		if err != nil {
			return nil, fmt.Errorf("azureblob: creating the client: %w", err)
		}
	case cfg.TokenCredential != nil:
		c, err = container.NewClient(base.String(), cfg.TokenCredential, opts)
		if err != nil {
			return nil, fmt.Errorf("azureblob: creating the client: %w", err)
		}
	default:
		return nil, errors.New("azureblob: no credential configured (account key or token credential)")
	}

	s := &Store{container: c, base: base, blockSize: cfg.BlockSize, concurrency: cfg.Concurrency}
	if s.blockSize <= 0 {
		s.blockSize = DefaultBlockSize
	}
	if s.concurrency <= 0 {
		s.concurrency = DefaultConcurrency
	}
	return s, nil
}

// URL returns the container's URL.
func (s *Store) URL() string { return s.base.String() }

// EnsureContainer creates the container unless it exists.
func (s *Store) EnsureContainer(ctx context.Context) error {
	_, err := s.container.Create(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("azureblob: creating container %s: %w", s.base, err)
	}
	return nil
}

// Put uploads the audio read from r as a block blob named name and returns
// the blob's URL. The body is streamed in blocks, so memory stays bounded
// whatever its length; an upload that fails part-way commits nothing.
func (s *Store) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	contentType, err := brainwire.CheckBlobPut(name, contentType)
	if err != nil {
		return "", err
	}
	b := s.container.NewBlockBlobClient(name)
	_, err = b.UploadStream(ctx, r, &blockblob.UploadStreamOptions{
		BlockSize:   s.blockSize,
		Concurrency: s.concurrency,
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &contentType},
	})
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return "", fmt.Errorf("azureblob: uploading %s: %w: %w", name,
			brainwire.Errorf(brainwire.EUnavailable, "audio container does not exist"), err)
	}
	if err != nil {
		return "", fmt.Errorf("azureblob: uploading %s: %w", name, err)
	}
	return b.URL(), nil
}

// Open downloads the blob at rawURL, which must be a blob of this store's
// container. Reads that break off are resumed where they stopped.
func (s *Store) Open(ctx context.Context, rawURL string) (io.ReadCloser, brainwire.BlobInfo, error) {
	name, err := s.nameOf(rawURL)
	if err != nil {
		return nil, brainwire.BlobInfo{}, err
	}
	resp, err := s.container.NewBlobClient(name).DownloadStream(ctx, nil)
	if isNotFound(err) {
		return nil, brainwire.BlobInfo{}, brainwire.Errorf(brainwire.ENotFound, "audio %s not found", name)
	}
	if err != nil {
		return nil, brainwire.BlobInfo{}, fmt.Errorf("azureblob: downloading %s: %w", name, err)
	}
	info := brainwire.BlobInfo{Name: name, ContentType: brainwire.DefaultBlobContentType}
	if resp.ContentType != nil && *resp.ContentType != "" {
		info.ContentType = *resp.ContentType
	}
	if resp.ContentLength != nil {
		info.Size = *resp.ContentLength
	}
	return resp.NewRetryReader(ctx, nil), info, nil
}

// Delete removes the blob at rawURL; a missing blob or container is not an
// error.
func (s *Store) Delete(ctx context.Context, rawURL string) error {
	name, err := s.nameOf(rawURL)
	if err != nil {
		return err
	}
	_, err = s.container.NewBlobClient(name).Delete(ctx, nil)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("azureblob: deleting %s: %w", name, err)
	}
	return nil
}

// nameOf returns the blob name rawURL points at, or EInvalid when it is not
// a blob directly in this store's container.
func (s *Store) nameOf(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != s.base.Scheme || !strings.EqualFold(u.Host, s.base.Host) ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", brainwire.Errorf(brainwire.EInvalid, "not a URL of the audio container: %q", rawURL)
	}
	name, ok := strings.CutPrefix(u.Path, s.base.Path+"/")
	if !ok {
		return "", brainwire.Errorf(brainwire.EInvalid, "not a URL of the audio container: %q", rawURL)
	}
	if err := brainwire.ValidBlobName(name); err != nil {
		return "", err
	}
	return name, nil
}

func isNotFound(err error) bool {
	if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return true
	}
	// Answers to HEAD requests carry no error code.
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// containerURL joins the account URL and the container name, checking both.
func containerURL(accountURL, containerName string) (*url.URL, error) {
	u, err := url.Parse(accountURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("azureblob: account URL %q is not an http(s) URL", accountURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("azureblob: account URL %q must have no query, fragment or user", accountURL)
	}
	if !validContainer(containerName) {
		return nil, fmt.Errorf("azureblob: invalid container name %q (3-63 lowercase letters, digits and single hyphens)", containerName)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/" + containerName
	u.RawPath = ""
	return u, nil
}

// validContainer applies Blob Storage's container naming rules.
func validContainer(name string) bool {
	if len(name) < 3 || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Kind names the backend in health reports.
func (s *Store) Kind() string { return "azure_blob" }
