-- The GitHub App installation a rollout's repository was merged under: its check-runs are written with that
-- installation's token (0: recorded before this column, or outside the App).
ALTER TABLE rollouts ADD COLUMN installation_id BIGINT NOT NULL DEFAULT 0;
