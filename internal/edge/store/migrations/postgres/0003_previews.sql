-- Pull request previews per change (repository, PR, head, base): another delivery naming a change that is done or
-- running is not previewed again, after a restart and on another replica too. A re-run or /plan takes a done
-- change over (force); a running claim that outlived claimed_until (its replica died) can be taken over.
CREATE TABLE previews (
    repo          TEXT        NOT NULL,
    pr_number     INTEGER     NOT NULL,
    head_sha      TEXT        NOT NULL,
    base_sha      TEXT        NOT NULL,
    state         TEXT        NOT NULL CHECK (state IN ('running', 'done')),
    claimed_until TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, pr_number, head_sha, base_sha)
);
CREATE INDEX previews_updated_at ON previews (updated_at);

-- The check-runs fleetwave created on a commit, by name (fleetwave/diff, fleetwave/plan): created once per
-- head, then updated.
CREATE TABLE head_check_runs (
    repo         TEXT        NOT NULL,
    head_sha     TEXT        NOT NULL,
    name         TEXT        NOT NULL,
    check_run_id BIGINT      NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, head_sha, name)
);
CREATE INDEX head_check_runs_created_at ON head_check_runs (created_at);
