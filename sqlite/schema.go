package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations bring the schema from version i to i+1; PRAGMA user_version
// holds the version a file is at. Append only: never edit a released step.
var migrations = []string{
	// 1: inbox items and bucket records.
	`
CREATE TABLE inbox (
	user_id           TEXT    NOT NULL,
	id                TEXT    NOT NULL,
	raw_text          TEXT    NOT NULL,
	title             TEXT    NOT NULL,
	source            TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('classified', 'pending', 'misunderstood')),
	classification    TEXT,             -- JSON classificationMeta; NULL when none
	filed_record_id   TEXT    NOT NULL, -- '' when the item has no bucket record
	foundry_thread_id TEXT    NOT NULL,
	created_at        INTEGER NOT NULL, -- Unix nanoseconds, UTC
	updated_at        INTEGER NOT NULL,
	PRIMARY KEY (user_id, id)
) STRICT;

CREATE INDEX inbox_by_created ON inbox (user_id, created_at DESC, id DESC);
CREATE INDEX inbox_by_status ON inbox (user_id, status, created_at DESC, id DESC);

-- Ids are unique per user and bucket, as in the per-bucket containers of the
-- production store. An item has at most one record.
CREATE TABLE bucket_records (
	user_id         TEXT    NOT NULL,
	bucket          TEXT    NOT NULL CHECK (bucket IN ('People', 'Projects', 'Ideas', 'Admin')),
	id              TEXT    NOT NULL,
	raw_text        TEXT    NOT NULL,
	title           TEXT    NOT NULL,
	classification  TEXT,
	inbox_record_id TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (user_id, bucket, id),
	UNIQUE (user_id, inbox_record_id),
	FOREIGN KEY (user_id, inbox_record_id) REFERENCES inbox (user_id, id) ON DELETE CASCADE
) STRICT;
`,
	// 2: how many follow-ups were filed onto an item.
	`ALTER TABLE inbox ADD COLUMN follow_up_rounds INTEGER NOT NULL DEFAULT 0;`,
	// 3: the agent run that filed an item (JSON agentRun; NULL when none).
	`ALTER TABLE inbox ADD COLUMN agent_run TEXT;`,
	// 4: the follow-up round being answered now (JSON FollowUpClaim; NULL
	// when none).
	`ALTER TABLE inbox ADD COLUMN follow_up_claim TEXT;`,
	// 5: the unresolved status. SQLite cannot change a CHECK in place, so
	// both tables are rebuilt: the records are copied into a table that
	// points at the new inbox before the old tables go, so that dropping
	// the old inbox cascades to none of them. Renaming the new inbox
	// renames the records' reference to it too.
	`
CREATE TABLE inbox_v5 (
	user_id           TEXT    NOT NULL,
	id                TEXT    NOT NULL,
	raw_text          TEXT    NOT NULL,
	title             TEXT    NOT NULL,
	source            TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('classified', 'pending', 'misunderstood', 'unresolved')),
	classification    TEXT,
	filed_record_id   TEXT    NOT NULL,
	foundry_thread_id TEXT    NOT NULL,
	follow_up_rounds  INTEGER NOT NULL DEFAULT 0,
	agent_run         TEXT,
	follow_up_claim   TEXT,
	created_at        INTEGER NOT NULL,
	updated_at        INTEGER NOT NULL,
	PRIMARY KEY (user_id, id)
) STRICT;
INSERT INTO inbox_v5 (user_id, id, raw_text, title, source, status, classification, filed_record_id, foundry_thread_id, follow_up_rounds, agent_run, follow_up_claim, created_at, updated_at)
SELECT user_id, id, raw_text, title, source, status, classification, filed_record_id, foundry_thread_id, follow_up_rounds, agent_run, follow_up_claim, created_at, updated_at FROM inbox;

CREATE TABLE bucket_records_v5 (
	user_id         TEXT    NOT NULL,
	bucket          TEXT    NOT NULL CHECK (bucket IN ('People', 'Projects', 'Ideas', 'Admin')),
	id              TEXT    NOT NULL,
	raw_text        TEXT    NOT NULL,
	title           TEXT    NOT NULL,
	classification  TEXT,
	inbox_record_id TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (user_id, bucket, id),
	UNIQUE (user_id, inbox_record_id),
	FOREIGN KEY (user_id, inbox_record_id) REFERENCES inbox_v5 (user_id, id) ON DELETE CASCADE
) STRICT;
INSERT INTO bucket_records_v5 (user_id, bucket, id, raw_text, title, classification, inbox_record_id, created_at)
SELECT user_id, bucket, id, raw_text, title, classification, inbox_record_id, created_at FROM bucket_records;

DROP TABLE bucket_records;
DROP TABLE inbox;
ALTER TABLE inbox_v5 RENAME TO inbox;
ALTER TABLE bucket_records_v5 RENAME TO bucket_records;
CREATE INDEX inbox_by_created ON inbox (user_id, created_at DESC, id DESC);
CREATE INDEX inbox_by_status ON inbox (user_id, status, created_at DESC, id DESC);
`,
	// 6: capture requests' idempotency keys (brainwire.IdempotencyKey),
	// swept by the time they lapse.
	`
CREATE TABLE idempotency_keys (
	user_id     TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL,
	token       TEXT    NOT NULL,
	state       TEXT    NOT NULL CHECK (state IN ('running', 'done')),
	at          INTEGER NOT NULL, -- Unix nanoseconds, UTC
	until       INTEGER NOT NULL,
	replay      TEXT,             -- JSON brainwire.Replay; NULL while running
	PRIMARY KEY (user_id, key)
) STRICT;

CREATE INDEX idempotency_keys_by_until ON idempotency_keys (until);
`,
	// 7: the inbox item an idempotency key's capture files
	// (brainwire.IdempotencyKey.ItemID; '' on keys claimed before), and the
	// key an item was filed under (JSON brainwire.KeyRecord; NULL when none).
	`
ALTER TABLE idempotency_keys ADD COLUMN item_id TEXT NOT NULL DEFAULT '';
ALTER TABLE inbox ADD COLUMN filed_under TEXT;
`,
	// 8: the shadow trial run on an item's capture (JSON
	// brainwire.ShadowTrial; NULL when none).
	`ALTER TABLE inbox ADD COLUMN shadow TEXT;`,
}

// migrate applies the missing migrations in one transaction, so that a
// failed step leaves the file at its old version, and two processes opening
// the same new file do not both create the tables.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating schema: %w", err)
	}
	defer func() { _ = tx.Rollback() }()

	schemaVersion := len(migrations)
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("schema version %d is newer than this program's %d", v, schemaVersion)
	}
	if v == schemaVersion {
		return nil
	}
	for i := v; i < schemaVersion; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrating schema to version %d: %w", i+1, err)
		}
	}
	// PRAGMA takes no bound parameters; the value is an int we control.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("recording schema version %d: %w", schemaVersion, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing schema version %d: %w", schemaVersion, err)
	}
	return nil
}
