-- Every `customer add-credit`: a balance can be traced to the grants that made it, and a command
-- repeated with the same --reference (a script retrying after a timeout) adds nothing again.
CREATE TABLE customer_credit_grants (
  id          bigserial PRIMARY KEY,
  org_id      bigint NOT NULL,
  customer_id bigint NOT NULL,
  amount      numeric(20, 8) NOT NULL CHECK (amount > 0),
  reference   varchar(255),
  created_at  timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (org_id, customer_id) REFERENCES customers (org_id, id)
);
CREATE UNIQUE INDEX customer_credit_grants_reference
  ON customer_credit_grants (org_id, customer_id, reference) WHERE reference IS NOT NULL;
