package recorder

import (
	"bytes"
	"context"
	"fmt"

	"github.com/brainwire/brainwire"
)

// BlobSink writes each recording as a blob named <name>.json into a blob
// store, so that the recordings of every replica of a server land in one
// place. A blob appears whole or not at all.
type BlobSink struct {
	Blobs brainwire.BlobStore
}

// Save implements Sink.
func (s BlobSink) Save(ctx context.Context, fx *Fixture) error {
	b, err := Marshal(fx)
	if err != nil {
		return err
	}
	name := FileName(fx.Name)
	if _, err := s.Blobs.Put(ctx, name, "application/json", bytes.NewReader(b)); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
