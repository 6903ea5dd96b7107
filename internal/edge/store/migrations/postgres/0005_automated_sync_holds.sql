-- Automated sync holds: an open pull request (or a terminal's `fleetwave rollout prepare`, pr_number 0) whose plan
-- rolls out apps with Argo CD automated sync had fleetwave switch it off for them before the merge can land. A row
-- per app and head (merge_group 1: held by a merge group of the pull request, head_sha the group's): what to restore when the pull request closes unmerged or its head stops planning the app; a
-- rollout of the merge takes the rows over (deletes them) when it starts.
CREATE TABLE automated_sync_holds (
    repo          TEXT    NOT NULL,
    pr_number     INTEGER NOT NULL,
    head_sha      TEXT    NOT NULL,
    app_namespace TEXT    NOT NULL,
    app_name      TEXT    NOT NULL,
    merge_group   INTEGER NOT NULL DEFAULT 0,
    held_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, pr_number, head_sha, app_namespace, app_name)
);
CREATE INDEX automated_sync_holds_app ON automated_sync_holds (app_namespace, app_name);
