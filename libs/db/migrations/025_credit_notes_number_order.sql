-- Credit notes list in number order within one instant (docs/decisions.md, "Concurrent credit
-- notes share their statements": the notes of one group share their created_at, their numbers
-- give their order). Ordered by created_at then the random id, a group's notes listed in no
-- particular order. The number is text, CN- and six digits then seven and more past CN-999999, so
-- as text CN-1000000 sorts before CN-999999: the lists order by number_seq, the number's digits as
-- a bigint, kept by Postgres from the number itself (one per number: UNIQUE (org_id, number), and
-- every number has its digits written one way). The lists' indexes read the new order; the
-- organization's is unique, so that order is total and an offset page neither skips nor repeats a
-- note (the invoice's and the customer's lists are parts of it). They include id, which a page far
-- into a list reads by an index-only scan (libs/list-pages).
ALTER TABLE credit_notes
  ADD COLUMN number_seq bigint GENERATED ALWAYS AS (substr(number, 4)::bigint) STORED;

DROP INDEX credit_notes_invoice_list;
DROP INDEX credit_notes_customer_list;
DROP INDEX credit_notes_org_list;
CREATE INDEX credit_notes_invoice_list ON credit_notes (org_id, invoice_id, created_at DESC, number_seq DESC) INCLUDE (id);
CREATE INDEX credit_notes_customer_list ON credit_notes (org_id, customer_id, created_at DESC, number_seq DESC) INCLUDE (id);
CREATE UNIQUE INDEX credit_notes_org_list ON credit_notes (org_id, created_at DESC, number_seq DESC) INCLUDE (id);
