import { getCustomer } from '../customers/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { formatMoney } from '../money/index.js';
import type { Customer } from '../schemas/index.js';
import { parseAmount } from './settlement.js';

/**
 * Adds to a customer's credit balance (a goodwill credit, a prepayment), held in the
 * organization's default currency. The next invoice posted for the customer in that currency
 * consumes it first, as a CREDIT_MEMO (DESIGN §6); invoices in another currency do not.
 */
export async function addCustomerCredit(
  tx: Queryable,
  input: { customerId: number; orgId?: number | undefined; amount: string },
): Promise<Customer> {
  const amount = parseAmount('amount', input.amount);
  const result = await tx
    .query<{ org_id: number }>(
      `UPDATE customers SET credit_balance = credit_balance + $3, updated_at = now()
        WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)
        RETURNING org_id`,
      [input.customerId, input.orgId ?? null, formatMoney(amount)],
    )
    .catch((error: { code?: string }) => {
      // numeric field overflow: the balance would pass NUMERIC(20, 8)
      if (error.code === '22003') {
        throw ApiError.validation([
          { field: 'amount', message: 'The credit balance would exceed its maximum.', code: 'out_of_range' },
        ]);
      }
      throw error;
    });
  const row = result.rows[0];
  if (!row) throw ApiError.notFound(`Customer ${input.customerId}`);
  return getCustomer(tx, row.org_id, input.customerId);
}
