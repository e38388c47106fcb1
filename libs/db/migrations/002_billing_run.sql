-- The billing run claims due subscriptions in next_billing_date order with FOR NO KEY UPDATE SKIP
-- LOCKED. A pending subscription is due on its start date, so the partial index of 001 (which
-- leaves pending out) is replaced by one over every status a run looks at.
CREATE INDEX subscriptions_billing_due ON subscriptions (next_billing_date, id)
  WHERE status IN ('pending', 'trialing', 'active', 'past_due', 'unpaid');
DROP INDEX subscriptions_due;
