-- Spend alerts (docs/decisions.md, "Alerts fire once per crossing"): one row per alert, its state
-- kept for the period it was last evaluated in, so that a crossing moves it once, whichever
-- evaluator (sink redelivery, restart, a second process) sees it first.
CREATE TABLE alerts (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id               bigint NOT NULL,
  customer_id          bigint NOT NULL,
  subscription_id      bigint NOT NULL,
  subscription_item_id bigint,
  metric               text NOT NULL CHECK (metric IN ('usage_quantity', 'usage_amount', 'credit_balance')),
  threshold            numeric(38, 8) NOT NULL,
  name                 varchar(255) NOT NULL DEFAULT '',
  status               text NOT NULL DEFAULT 'OK' CHECK (status IN ('OK', 'TRIGGERED')),
  value                numeric(38, 8),
  triggered_at         timestamptz,
  -- the period the status is about (usage metrics start OK again, silently, in a new one)
  period_start         timestamptz,
  -- the as_of of the reading last applied: an older reading (a slower evaluator) never undoes it
  evaluated_as_of      timestamptz,
  -- made by the customer in the portal (only usage_amount alerts)
  created_in_portal    boolean NOT NULL DEFAULT false,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CHECK ((metric = 'usage_quantity') = (subscription_item_id IS NOT NULL)),
  FOREIGN KEY (org_id, customer_id) REFERENCES customers (org_id, id),
  FOREIGN KEY (org_id, subscription_id) REFERENCES subscriptions (org_id, id),
  UNIQUE (org_id, id)
);
CREATE INDEX alerts_org_list ON alerts (org_id, created_at DESC, id DESC);
CREATE INDEX alerts_subscription ON alerts (org_id, subscription_id);
CREATE INDEX alerts_customer ON alerts (org_id, customer_id);
