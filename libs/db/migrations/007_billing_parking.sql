-- A subscription whose period cannot be invoiced (its total would exceed what an invoice holds)
-- is parked by the billing run: later runs skip it until an operator unparks it (after fixing the
-- cause) or cancels it without invoicing; the rest of its organization's billing goes on.
ALTER TABLE subscriptions
  ADD COLUMN billing_parked_at timestamptz,
  ADD COLUMN billing_parked_reason text,
  -- canceled by an operator without invoicing its ended periods (recorded, not silent)
  ADD COLUMN canceled_without_invoicing boolean NOT NULL DEFAULT false;
