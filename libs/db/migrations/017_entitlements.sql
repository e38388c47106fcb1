-- Entitlements (docs/decisions.md, "Where the entitlement counter lives and why"): a metered item may
-- carry a usage limit per billing period; null is no limit. Exact like every quantity (numeric(38, 8),
-- as included_units). The entitlement reads list a customer's items through its subscriptions.
ALTER TABLE subscription_items ADD COLUMN usage_limit numeric(38, 8) CHECK (usage_limit >= 0);
