import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { type DomainEvent, emitDomainEvents } from '../../events/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { CreateCreditGrant, type CreditGrant, isUuid } from '../../schemas/index.js';
import {
  activateHeldGrant,
  findGrantByReference,
  insertGrant,
  lockCreditCustomer,
  lockGrant,
  lockGrantSoldBy,
  toCreditGrant,
  voidHeldGrant,
} from '../credits/index.js';
import { addDays, invoiceEventData, parseAmount, parseInput, utcDate } from '../domain/index.js';
import {
  formatInvoiceNumber,
  insertInvoices,
  type NewInvoice,
  reserveInvoiceNumbers,
} from '../invoices/index.js';
import { type LockedInvoice, lockInvoice, withdrawLocked } from './invoice-operations.js';
import { assertPayableAmount } from './settlement.js';

/**
 * Making and voiding credit grants (docs/decisions.md, "Credits"): the API, the console, the
 * automatic top-up and the legacy `customer add-credit` all come here. A paid grant sells its
 * credits on a POSTED "Prepaid credits" invoice made in the same transaction (tax EXEMPT: tax is
 * charged on the invoices the credits pay) and stays PENDING until that invoice is paid.
 */

export const PREPAID_CREDITS_LINE = 'Prepaid credits';

export interface GrantRequest {
  customerId: number;
  orgId?: number | undefined;
  input: unknown;
  now?: Date | undefined;
  source?: 'request' | 'top_up';
}

/** 201 with a new grant, or 200 with the grant its `reference` already made. */
export async function createCreditGrant(
  tx: Queryable,
  request: GrantRequest,
): Promise<{ grant: CreditGrant; created: boolean }> {
  const input = parseInput(CreateCreditGrant, request.input);
  const now = request.now ?? new Date();
  const customer = await lockCreditCustomer(tx, request.customerId, request.orgId);
  const amount = parseAmount('amount', input.amount);
  assertPayableAmount('amount', amount, customer.currency);
  const effectiveAt = input.effective_at ? new Date(input.effective_at) : now;
  const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  // not given: the transaction's own now(), so that what the transaction reads counts it
  if (expiresAt && expiresAt.getTime() <= effectiveAt.getTime()) {
    throw ApiError.validation([
      { field: 'expires_at', message: 'Must be after effective_at.', code: 'out_of_range' },
    ]);
  }
  if (input.reference !== undefined) {
    const made = await findGrantByReference(tx, customer.org_id, request.customerId, input.reference);
    if (made) {
      if (parseMoney(made.amount) !== amount) {
        throw ApiError.conflict(
          `Customer ${request.customerId} already has a credit with reference ${input.reference} ` +
            `(${formatMoney(parseMoney(made.amount))}); use another reference for another grant (credit grant ${made.id}).`,
        );
      }
      return { grant: toCreditGrant(made), created: false };
    }
  }
  const paid = input.category === 'paid';
  const invoice = paid
    ? await sellCredits(tx, { orgId: customer.org_id, customerId: request.customerId, amount, now })
    : undefined;
  const grant = await insertGrant(tx, {
    org_id: customer.org_id,
    customer_id: request.customerId,
    name: input.name ?? (paid ? PREPAID_CREDITS_LINE : 'Promotional credits'),
    category: input.category,
    currency: customer.currency,
    amount,
    priority: input.priority,
    applies_to: input.applies_to,
    effective_at: input.effective_at ? effectiveAt : null,
    expires_at: expiresAt,
    status: paid ? 'PENDING' : 'ACTIVE',
    invoice_id: invoice?.id ?? null,
    reference: input.reference ?? null,
    source: request.source ?? 'request',
  });
  const events: DomainEvent[] = [];
  if (invoice)
    events.push({ orgId: invoice.org_id, type: 'invoice.posted', data: invoiceEventData(invoice) });
  events.push({ orgId: grant.org_id, type: 'credit_grant.created', data: toCreditGrant(grant) });
  await emitDomainEvents(tx, events);
  return { grant: toCreditGrant(grant), created: true };
}

/** The POSTED invoice a paid grant sells its credits on: one EXEMPT line, no subscription. */
async function sellCredits(
  tx: Queryable,
  sale: { orgId: number; customerId: number; amount: bigint; now: Date },
): Promise<NewInvoice> {
  const numbering = await reserveInvoiceNumbers(tx, sale.orgId, 1);
  const today = utcDate(sale.now);
  const amount = formatMoney(sale.amount);
  const invoice: NewInvoice = {
    id: randomUUID(),
    org_id: sale.orgId,
    invoice_number: formatInvoiceNumber(numbering.first),
    customer_id: sale.customerId,
    subscription_id: null,
    invoice_date: today,
    period_start: today,
    period_end: today,
    due_date: addDays(today, numbering.paymentTermsDays),
    status: 'POSTED',
    subtotal: amount,
    tax_amount: formatMoney(0n),
    total: amount,
    amount_paid: formatMoney(0n),
    currency: numbering.creditCurrency,
    posted: true,
    lines: [
      {
        product_id: null,
        subscription_item_id: null,
        description: PREPAID_CREDITS_LINE,
        quantity: '1.0000',
        unit_price: amount,
        line_total_pre_tax: amount,
        tax_amount: formatMoney(0n),
        tax_type: 'EXEMPT',
      },
    ],
  };
  await insertInvoices(tx, [invoice]);
  return invoice;
}

/**
 * VOIDED: what is left lapses, what was used stays used; a PENDING grant's invoice is withdrawn
 * with it (one that took payments cannot be: 409). A grant already DEPLETED, EXPIRED or VOIDED is
 * answered as it is. Locks go invoice, customer, grant: the order of every path that touches a
 * Prepaid credits invoice (payments, withdrawal), so none of them deadlock.
 */
export async function voidCreditGrant(
  tx: Queryable,
  request: { grantId: string; orgId?: number | undefined; now?: Date | undefined },
): Promise<CreditGrant> {
  if (!isUuid(request.grantId)) throw ApiError.notFound(`Credit grant ${request.grantId}`);
  const { rows } = await tx.query<{ org_id: number; invoice_id: string | null }>(
    'SELECT org_id, invoice_id FROM credit_grants WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)',
    [request.grantId, request.orgId ?? null],
  );
  const found = rows[0];
  if (!found) throw ApiError.notFound(`Credit grant ${request.grantId}`);
  const invoice = found.invoice_id
    ? await lockInvoice(tx, { invoiceId: found.invoice_id, orgId: found.org_id })
    : undefined;
  const grant = await lockGrant(tx, request.grantId, found.org_id);
  if (grant.status === 'PENDING' && invoice) {
    await withdrawLocked(tx, invoice, request.now ?? new Date());
  }
  return toCreditGrant(await voidHeldGrant(tx, grant));
}

/** A Prepaid credits invoice was paid in full: the grant it sold becomes ACTIVE. */
export async function activateGrantSoldBy(tx: Queryable, invoice: LockedInvoice): Promise<void> {
  if (invoice.subscription_id !== null) return;
  await lockCreditCustomer(tx, invoice.customer_id, invoice.org_id);
  const grant = await lockGrantSoldBy(tx, invoice.org_id, invoice.id);
  if (grant) await activateHeldGrant(tx, grant);
}

/** `customer add-credit`: a promotional grant of the organization's currency, effective now. */
export async function addPromotionalCredit(
  tx: Queryable,
  input: { customerId: number; orgId?: number | undefined; amount: string; reference?: string | undefined },
): Promise<CreditGrant> {
  const { grant } = await createCreditGrant(tx, {
    customerId: input.customerId,
    orgId: input.orgId,
    input: {
      amount: input.amount,
      category: 'promotional',
      name: 'Customer credit',
      ...(input.reference === undefined ? {} : { reference: input.reference }),
    },
  });
  return grant;
}
