-- Drift reports (#37): the GitHub issue fleetwave keeps open for an app in lasting drift (internal/drift), one
-- row per app (instance '' is the one Argo CD of a fleet configured the old way), so that a restarted or second
-- replica edits and closes that issue instead of opening another. digest is what the issue last said (its state
-- in short), reported_at when it was last written. Keep in step with ../sqlite/0008_drift_reports.sql.
CREATE TABLE drift_reports (
    app_instance  TEXT        NOT NULL DEFAULT '',
    app_namespace TEXT        NOT NULL,
    app_name      TEXT        NOT NULL,
    repo          TEXT        NOT NULL,
    issue_number  INTEGER     NOT NULL,
    digest        TEXT        NOT NULL DEFAULT '',
    opened_at     TIMESTAMPTZ NOT NULL,
    reported_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (app_instance, app_namespace, app_name)
);
