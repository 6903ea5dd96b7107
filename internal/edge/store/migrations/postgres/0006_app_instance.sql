-- The Argo CD instance of an app (#36): an app is (instance, namespace, name). '' is the one Argo CD of a fleet
-- configured the old way, so the rows of an existing store keep their meaning. Keep in step with
-- ../sqlite/0006_app_instance.sql. The constraint names are PostgreSQL's defaults for 0001's and 0005's.
ALTER TABLE app_steps ADD COLUMN app_instance TEXT NOT NULL DEFAULT '';
ALTER TABLE app_steps DROP CONSTRAINT app_steps_rollout_id_app_namespace_app_name_key;
ALTER TABLE app_steps ADD CONSTRAINT app_steps_rollout_id_app_instance_app_namespace_app_name_key
    UNIQUE (rollout_id, app_instance, app_namespace, app_name);
DROP INDEX app_steps_app;
CREATE INDEX app_steps_app ON app_steps (app_instance, app_namespace, app_name);

ALTER TABLE automated_sync_holds ADD COLUMN app_instance TEXT NOT NULL DEFAULT '';
ALTER TABLE automated_sync_holds DROP CONSTRAINT automated_sync_holds_pkey;
ALTER TABLE automated_sync_holds ADD PRIMARY KEY (repo, pr_number, head_sha, app_instance, app_namespace, app_name);
DROP INDEX automated_sync_holds_app;
CREATE INDEX automated_sync_holds_app ON automated_sync_holds (app_instance, app_namespace, app_name);
