-- The services read the keys revoked in the last minutes every second (libs/auth authenticator),
-- to drop them from their caches at once: few rows, found by this index.
CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;
