-- Customer portal and hosted invoice pages (docs/architecture.md, "Customer portal").

-- A portal session is a link for one customer of one organization. Only the SHA-256 of its token
-- is kept: the token itself is shown once, in the url POST /portal-sessions answers.
CREATE TABLE portal_sessions (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      bigint NOT NULL,
  customer_id bigint NOT NULL,
  token_hash  bytea NOT NULL UNIQUE,
  locale      text NOT NULL CHECK (locale IN ('en', 'fr-CA')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  FOREIGN KEY (org_id, customer_id) REFERENCES customers (org_id, id)
);
CREATE INDEX portal_sessions_expiry ON portal_sessions (expires_at);

-- Hosted invoice links are signed, not stored: hosted_url is part of every invoice read, so it
-- must be derivable. Each organization signs with its own random key (two v4 UUIDs: 244 bits from
-- the server's strong random source), so one organization's key never opens another's invoices.
ALTER TABLE organizations ADD COLUMN hosted_link_key bytea NOT NULL
  DEFAULT decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex');

-- When an invoice stopped being collectible (first PAID, WITHDRAWN or refunded): its hosted link
-- stays valid 90 days after that. Set by the trigger, so no code path can forget it.
ALTER TABLE invoices ADD COLUMN closed_at timestamptz;
UPDATE invoices SET closed_at = updated_at
 WHERE status IN ('PAID', 'WITHDRAWN', 'REFUNDED', 'PARTIALLY_REFUNDED');

CREATE FUNCTION invoices_mark_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.closed_at IS NULL AND NEW.status IN ('PAID', 'WITHDRAWN', 'REFUNDED', 'PARTIALLY_REFUNDED') THEN
    NEW.closed_at := now();
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER invoices_closed_at BEFORE INSERT OR UPDATE OF status ON invoices
  FOR EACH ROW EXECUTE FUNCTION invoices_mark_closed();
