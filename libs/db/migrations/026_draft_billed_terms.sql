-- A DRAFT period invoice keeps the terms it billed each item at (quantity, unit price, included
-- units), and a withdrawn draft's period keeps them until it is billed again: a change since moves
-- an item's own terms in place, and neither re-rating the draft nor billing its period again may
-- bill the period at those (docs/decisions.md "A withdrawn draft's period is billed again").
-- { "<subscription item id>": { "quantity": n, "unit_price": "...", "included_units": "..." } };
-- NULL on posted invoices (final) and on drafts made before this column.
ALTER TABLE invoices ADD COLUMN billed_terms jsonb;
ALTER TABLE subscription_rebill_periods ADD COLUMN billed_terms jsonb;
