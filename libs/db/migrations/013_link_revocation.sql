-- Links for people can be taken back (issue 37).

-- DELETE /portal-sessions/{id}: a revoked session opens nothing from then on (410, as a page that
-- shows no data). Kept, like expired ones, so a revoked link can be told from an unknown one.
ALTER TABLE portal_sessions ADD COLUMN revoked_at timestamptz;

-- POST /invoices/{id}/rotate-hosted-url: a hosted link is signed over the invoice id and this
-- generation (0: the links made before it existed, signed over the id alone). Moving it makes
-- every earlier link of the invoice fail its signature, and hosted_url the new link.
ALTER TABLE invoices ADD COLUMN hosted_link_generation integer NOT NULL DEFAULT 0
  CHECK (hosted_link_generation >= 0);
