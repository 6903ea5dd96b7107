-- The sticky comment posted for each previewed change (repository, PR, head, base), parts as a JSON array of
-- strings, and which of a PR's changes the comment shows now (shown = 1 on at most one row per PR): when the
-- PR's head returns to a commit already previewed, the comment is re-pointed to that change's stored parts
-- without previewing it again (#34).
CREATE TABLE preview_comments (
    repo       TEXT    NOT NULL,
    pr_number  INTEGER NOT NULL,
    head_sha   TEXT    NOT NULL,
    base_sha   TEXT    NOT NULL,
    parts      TEXT    NOT NULL,
    shown      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (repo, pr_number, head_sha, base_sha)
);
CREATE INDEX preview_comments_updated_at ON preview_comments (updated_at);
