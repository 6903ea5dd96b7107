-- fleetwave store, schema version 1 (SQLite dialect). Keep in step with ../postgres/0001_init.sql:
-- the same tables, columns and constraints; timestamps are INTEGER microseconds since the Unix epoch.

-- GitHub webhook deliveries already accepted (X-GitHub-Delivery), so a redelivery is recognised after a restart.
CREATE TABLE deliveries (
    id          TEXT    NOT NULL PRIMARY KEY,
    received_at INTEGER NOT NULL
);
CREATE INDEX deliveries_received_at ON deliveries (received_at);

-- One merge carried across the fleet.
CREATE TABLE rollouts (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    repo                  TEXT    NOT NULL,
    pr_number             INTEGER NOT NULL DEFAULT 0,
    merge_sha             TEXT    NOT NULL,
    base_sha              TEXT    NOT NULL DEFAULT '',
    plan                  BLOB    NOT NULL,
    plan_digest           TEXT    NOT NULL,
    state                 TEXT    NOT NULL,
    message               TEXT    NOT NULL DEFAULT '',
    superseded_by         INTEGER REFERENCES rollouts (id),
    check_run_id          INTEGER NOT NULL DEFAULT 0,
    rollback_check_run_id INTEGER NOT NULL DEFAULT 0,
    created_at            INTEGER NOT NULL,
    updated_at            INTEGER NOT NULL,
    version               INTEGER NOT NULL DEFAULT 1,
    UNIQUE (repo, merge_sha)
);
CREATE INDEX rollouts_state ON rollouts (state);
CREATE INDEX rollouts_repo_pr ON rollouts (repo, pr_number);

CREATE TABLE waves (
    rollout_id   INTEGER NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    name         TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    check_run_id INTEGER NOT NULL DEFAULT 0,
    approved_by  TEXT    NOT NULL DEFAULT '',
    approved_at  INTEGER,
    gate_state   TEXT,
    message      TEXT    NOT NULL DEFAULT '',
    started_at   INTEGER,
    finished_at  INTEGER,
    updated_at   INTEGER NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (rollout_id, idx)
);

-- One app of a rollout: the intent/outcome record of every side effect on it.
CREATE TABLE app_steps (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    rollout_id        INTEGER NOT NULL,
    wave_idx          INTEGER NOT NULL,
    batch_idx         INTEGER NOT NULL,
    app_namespace     TEXT    NOT NULL,
    app_name          TEXT    NOT NULL,
    cluster           TEXT    NOT NULL DEFAULT '',
    previous_revision TEXT    NOT NULL DEFAULT '',
    target_revision   TEXT    NOT NULL,
    state             TEXT    NOT NULL,
    op                TEXT    NOT NULL DEFAULT 'sync',
    attempts          INTEGER NOT NULL DEFAULT 0,
    intent_at         INTEGER,
    triggered_at      INTEGER,
    op_started_at     INTEGER,
    op_finished_at    INTEGER,
    health            TEXT    NOT NULL DEFAULT '',
    message           TEXT    NOT NULL DEFAULT '',
    updated_at        INTEGER NOT NULL,
    version           INTEGER NOT NULL DEFAULT 1,
    FOREIGN KEY (rollout_id, wave_idx) REFERENCES waves (rollout_id, idx) ON DELETE CASCADE,
    UNIQUE (rollout_id, app_namespace, app_name)
);
CREATE INDEX app_steps_app ON app_steps (app_namespace, app_name);

-- The audit log of a rollout: commands and what the bot did.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    rollout_id  INTEGER NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    actor       TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    target      TEXT    NOT NULL DEFAULT '',
    result      TEXT    NOT NULL DEFAULT '',
    message     TEXT    NOT NULL DEFAULT '',
    delivery_id TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX events_rollout ON events (rollout_id, id);

-- Which replica runs which rollout, until when.
CREATE TABLE leases (
    rollout_id  INTEGER NOT NULL PRIMARY KEY REFERENCES rollouts (id) ON DELETE CASCADE,
    owner       TEXT    NOT NULL,
    epoch       INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX leases_expires_at ON leases (expires_at);
