-- Since when each app of the inventory (#37) has its sync and health status, so that a restart keeps "OutOfSync
-- since 09:12" instead of restarting the clock. A row per app (instance '' is the one Argo CD of a fleet configured
-- the old way), written when an app's status changes and deleted with the app. Keep in step with
-- ../postgres/0007_app_since.sql.
CREATE TABLE app_since (
    app_instance  TEXT    NOT NULL,
    app_namespace TEXT    NOT NULL,
    app_name      TEXT    NOT NULL,
    sync          TEXT    NOT NULL DEFAULT '',
    sync_since    INTEGER,
    health        TEXT    NOT NULL DEFAULT '',
    health_since  INTEGER,
    PRIMARY KEY (app_instance, app_namespace, app_name)
);
