import { getCustomer } from '../../customers/index.js';
import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import type { Customer } from '../../schemas/index.js';
import { parseAmount } from '../domain/index.js';
import { assertPayableAmount } from './settlement.js';

/**
 * Adds to a customer's credit balance (a goodwill credit, a prepayment), held in the
 * organization's default currency. The next invoice posted for the customer in that currency
 * consumes it first, as a CREDIT_MEMO (DESIGN §6); invoices in another currency do not. Each grant
 * is recorded. A `reference` names one grant: repeated, it adds nothing again (as payments do);
 * the same reference with another amount is a 409.
 */
export async function addCustomerCredit(
  tx: Queryable,
  input: { customerId: number; orgId?: number | undefined; amount: string; reference?: string | undefined },
): Promise<Customer> {
  const amount = parseAmount('amount', input.amount);
  // Locks the customer: two runs with one reference cannot both find it unused.
  const customer = await tx.query<{ org_id: number; currency: string }>(
    `SELECT c.org_id, o.default_currency AS currency FROM customers c JOIN organizations o ON o.id = c.org_id
      WHERE c.id = $1 AND ($2::bigint IS NULL OR c.org_id = $2) FOR UPDATE OF c`,
    [input.customerId, input.orgId ?? null],
  );
  const orgId = customer.rows[0]?.org_id;
  if (orgId === undefined) throw ApiError.notFound(`Customer ${input.customerId}`);
  // credit is consumed by invoices in the organization's default currency: whole minor units
  assertPayableAmount('amount', amount, customer.rows[0]!.currency);
  if (input.reference !== undefined) {
    const { rows } = await tx.query<{ amount: string }>(
      `SELECT amount FROM customer_credit_grants WHERE org_id = $1 AND customer_id = $2 AND reference = $3`,
      [orgId, input.customerId, input.reference],
    );
    const granted = rows[0];
    if (granted) {
      if (parseMoney(granted.amount) !== amount) {
        throw ApiError.conflict(
          `Customer ${input.customerId} already has a credit with reference ${input.reference} ` +
            `(${granted.amount}); give another reference for another one.`,
        );
      }
      return getCustomer(tx, orgId, input.customerId);
    }
  }
  await tx
    .query(
      `WITH grant_row AS (
         INSERT INTO customer_credit_grants (org_id, customer_id, amount, reference) VALUES ($1, $2, $3, $4)
       )
       UPDATE customers SET credit_balance = credit_balance + $3, updated_at = now()
        WHERE org_id = $1 AND id = $2`,
      [orgId, input.customerId, formatMoney(amount), input.reference ?? null],
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
  return getCustomer(tx, orgId, input.customerId);
}

export interface CreditApplication {
  org_id: number;
  customer_id: number;
  invoice_id: string;
  amount: string;
}

export const CREDIT_BALANCE_NOTE = 'Customer credit balance applied';

/** Credit consumed at posting: one CREDIT_MEMO per invoice, and the customers' balances reduced. */
export async function applyCredits(tx: Queryable, credits: readonly CreditApplication[]): Promise<void> {
  if (credits.length === 0) return;
  await tx.query(
    `INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, note)
     SELECT org_id, invoice_id, 'CREDIT_MEMO', amount, 'EXTERNAL', 'COMPLETED', $2
       FROM jsonb_to_recordset($1::jsonb) AS x(org_id bigint, invoice_id uuid, amount numeric)`,
    [JSON.stringify(credits), CREDIT_BALANCE_NOTE],
  );
  await tx.query(
    `UPDATE customers c SET credit_balance = c.credit_balance - x.used, updated_at = now()
       FROM (SELECT org_id, customer_id, sum(amount) AS used
               FROM jsonb_to_recordset($1::jsonb) AS r(org_id bigint, customer_id bigint, amount numeric)
              GROUP BY org_id, customer_id) x
      WHERE c.org_id = x.org_id AND c.id = x.customer_id`,
    [JSON.stringify(credits)],
  );
}
