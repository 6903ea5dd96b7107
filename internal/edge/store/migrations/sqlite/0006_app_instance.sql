-- The Argo CD instance of an app (#36): an app is (instance, namespace, name). '' is the one Argo CD of a fleet
-- configured the old way, so the rows of an existing store keep their meaning. Keep in step with
-- ../postgres/0006_app_instance.sql. SQLite cannot change a table's UNIQUE or PRIMARY KEY constraint, so app_steps
-- and automated_sync_holds are rebuilt with the instance at the end (where PostgreSQL's ADD COLUMN puts it) and
-- in their keys; nothing references either table.
CREATE TABLE app_steps_0006 (
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
    app_instance      TEXT    NOT NULL DEFAULT '',
    FOREIGN KEY (rollout_id, wave_idx) REFERENCES waves (rollout_id, idx) ON DELETE CASCADE,
    UNIQUE (rollout_id, app_instance, app_namespace, app_name)
);
INSERT INTO app_steps_0006 (id, rollout_id, wave_idx, batch_idx, app_namespace, app_name, cluster, previous_revision,
    target_revision, state, op, attempts, intent_at, triggered_at, op_started_at, op_finished_at, health, message,
    updated_at, version)
SELECT id, rollout_id, wave_idx, batch_idx, app_namespace, app_name, cluster, previous_revision,
    target_revision, state, op, attempts, intent_at, triggered_at, op_started_at, op_finished_at, health, message,
    updated_at, version FROM app_steps;
DROP TABLE app_steps;
ALTER TABLE app_steps_0006 RENAME TO app_steps;
CREATE INDEX app_steps_app ON app_steps (app_instance, app_namespace, app_name);

CREATE TABLE automated_sync_holds_0006 (
    repo          TEXT    NOT NULL,
    pr_number     INTEGER NOT NULL,
    head_sha      TEXT    NOT NULL,
    app_namespace TEXT    NOT NULL,
    app_name      TEXT    NOT NULL,
    merge_group   INTEGER NOT NULL DEFAULT 0,
    held_at       INTEGER NOT NULL,
    app_instance  TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (repo, pr_number, head_sha, app_instance, app_namespace, app_name)
);
INSERT INTO automated_sync_holds_0006 (repo, pr_number, head_sha, app_namespace, app_name, merge_group, held_at)
SELECT repo, pr_number, head_sha, app_namespace, app_name, merge_group, held_at FROM automated_sync_holds;
DROP TABLE automated_sync_holds;
ALTER TABLE automated_sync_holds_0006 RENAME TO automated_sync_holds;
CREATE INDEX automated_sync_holds_app ON automated_sync_holds (app_instance, app_namespace, app_name);
