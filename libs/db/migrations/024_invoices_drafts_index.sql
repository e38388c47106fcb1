-- The subscriptions with a DRAFT invoice, which the sinks' guardrails reload every 2 s (the drafts
-- policy, libs/guardrails/draft-policy.ts): without an index that reload read the whole invoices
-- table each time, almost all of it posted invoices, on the Postgres the api's requests share.
-- Drafts are few at any time (a grace period's, `billing run --draft`'s), so the reload reads this
-- small partial index only; other invoices never enter it.
CREATE INDEX invoices_drafts ON invoices (org_id, subscription_id)
  WHERE status = 'DRAFT' AND subscription_id IS NOT NULL;
