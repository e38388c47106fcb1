-- Room on credit_grants' pages for the next version of each row (docs/decisions.md, "A billing run
-- batch writes its grant uses in one statement, each grant once"). Every grant is rewritten by its
-- first use, and a posting batch rewrites most grants of the customers it bills at once. An update
-- that changes no indexed column (remaining, used, updated_at: a use that leaves the grant ACTIVE)
-- stays on its page without new index entries (a HOT update) only if the page has room for the new
-- version; at the default fill of 100% a freshly written page has none, so each such update wrote
-- a new entry in five indexes. A change of status (DEPLETED, EXPIRED, VOIDED, ACTIVE) is never HOT:
-- partial indexes name the status. Applies to pages written from now on; existing pages gain room
-- as vacuum reclaims their dead versions.
ALTER TABLE credit_grants SET (fillfactor = 50);
