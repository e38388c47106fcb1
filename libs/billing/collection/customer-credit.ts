import { getCustomer } from '../../customers/index.js';
import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';
import type { Customer } from '../../schemas/index.js';
import { parseAmount } from '../domain/index.js';
import { addPromotionalCredit } from './credit-grants.js';

/**
 * `customer add-credit` (console): a promotional credit grant, effective now, never expiring
 * (libs/billing/credits). A `reference` names one grant: repeated, it adds nothing again; the same
 * reference with another amount is a 409. References given before grants existed (kept in
 * customer_credit_grants) are honoured the same way.
 */
export async function addCustomerCredit(
  tx: Queryable,
  input: { customerId: number; orgId?: number | undefined; amount: string; reference?: string | undefined },
): Promise<Customer> {
  if (input.reference !== undefined) {
    const amount = parseAmount('amount', input.amount);
    const { rows } = await tx.query<{ org_id: number; amount: string }>(
      `SELECT org_id, amount FROM customer_credit_grants
        WHERE customer_id = $1 AND ($2::bigint IS NULL OR org_id = $2) AND reference = $3`,
      [input.customerId, input.orgId ?? null, input.reference],
    );
    const earlier = rows[0];
    if (earlier) {
      if (parseMoney(earlier.amount) !== amount) {
        throw ApiError.conflict(
          `Customer ${input.customerId} already has a credit with reference ${input.reference} ` +
            `(${earlier.amount}); give another reference for another one.`,
        );
      }
      return getCustomer(tx, earlier.org_id, input.customerId);
    }
  }
  const grant = await addPromotionalCredit(tx, input);
  const { rows } = await tx.query<{ org_id: number }>('SELECT org_id FROM customers WHERE id = $1', [
    grant.customer_id,
  ]);
  return getCustomer(tx, rows[0]!.org_id, input.customerId);
}
