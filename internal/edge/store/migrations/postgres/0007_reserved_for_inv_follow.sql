-- PLACEHOLDER, not a schema change: version 7 belongs to the inventory's migration (branch inv-follow), and the
-- loader wants versions without a gap, so branch drift carries this no-op to stand where 0007 will. Delete this
-- file (in both dialects) when the real 0007 is merged.
SELECT 1;
