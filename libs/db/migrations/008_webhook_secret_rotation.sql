-- Secret rotation: after POST /webhook-endpoints/{id}/rotate-secret the previous secret also signs
-- webhook-signature until previous_secret_expires_at, then the dispatcher forgets it (sets both
-- NULL). Kept like the current secret: in clear, since it must sign; never returned by the API.
ALTER TABLE webhook_endpoints
  ADD COLUMN previous_secret text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD CONSTRAINT webhook_endpoints_previous_secret_expires
    CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL));
CREATE INDEX webhook_endpoints_previous_secret_expiry ON webhook_endpoints (previous_secret_expires_at)
  WHERE previous_secret IS NOT NULL;

-- A recovered event starts a new series of attempts at this attempt number: its retry delays
-- start over from the first.
ALTER TABLE webhook_events ADD COLUMN series_first_attempt integer NOT NULL DEFAULT 1;

-- Which secrets signed each attempt, by key id (never the secrets): the one behind
-- X-Service-Signature, and each one behind webhook-signature. NULL for attempts made before.
ALTER TABLE webhook_attempts
  ADD COLUMN service_signature_key_id text,
  ADD COLUMN standard_signature_key_ids text[];
