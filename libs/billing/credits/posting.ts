import type { Queryable } from '../../db/index.js';
import type { DomainEvent } from '../../events/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import { type BurnableInvoice, type GrantUse, planBurnDowns } from './burn-down.js';
import { activeGrantsOfHeld, expireDue, type RecordedUse, recordGrantUses } from './grants.js';

/**
 * Credits at posting (billing run, `invoice post`, a cancel's final invoice): the customers'
 * grants are held, those whose expiry has come by `at` lapse first ("before every use"), then
 * each invoice is paid down in the burn-down order, the invoices of one customer in the order
 * given. Two steps, because the uses are written once the invoices exist (their CREDIT_MEMOs
 * point at them): planCreditsOnPosting, then recordCreditsOnPosting.
 */

export interface PostingInvoice extends BurnableInvoice {
  id: string;
  org_id: number;
  customer_id: number;
}

export interface CreditsOnPosting {
  /** Per invoice, in the order given: the grants that pay it. */
  uses: GrantUse[][];
  /** credit_grant.expired of the grants that lapsed on the way. */
  events: DomainEvent[];
}

/** The customers of `invoices` must be held by the caller (FOR NO KEY UPDATE), in id order. */
export async function planCreditsOnPosting(
  tx: Queryable,
  invoices: readonly PostingInvoice[],
  at: Date,
): Promise<CreditsOnPosting> {
  const payable = invoices.filter((invoice) => !invoice.prepaid_credits && parseMoney(invoice.balance) > 0n);
  if (payable.length === 0) return { uses: invoices.map(() => []), events: [] };
  const held = await activeGrantsOfHeld(
    tx,
    unique(payable.map((invoice) => ({ org_id: invoice.org_id, id: invoice.customer_id }))),
  );
  // each customer's invoices, in the order given
  const payableOf = new Map<number, PostingInvoice[]>();
  for (const invoice of payable) {
    const theirs = payableOf.get(invoice.customer_id);
    if (theirs) theirs.push(invoice);
    else payableOf.set(invoice.customer_id, [invoice]);
  }
  const events: DomainEvent[] = [];
  const uses = new Map<string, GrantUse[]>();
  for (const [customerId, grants] of held) {
    const { events: lapsed, active } = await expireDue(tx, grants, at);
    events.push(...lapsed);
    const theirs = payableOf.get(customerId) ?? [];
    const planned = planBurnDowns(theirs, active, at);
    theirs.forEach((invoice, index) => {
      uses.set(invoice.id, planned[index]!);
    });
  }
  return { uses: invoices.map((invoice) => uses.get(invoice.id) ?? []), events };
}

/** Writes the planned uses (the invoices now exist); returns credit_grant.depleted events. */
export async function recordCreditsOnPosting(
  tx: Queryable,
  invoices: readonly { id: string; org_id: number }[],
  planned: CreditsOnPosting,
): Promise<DomainEvent[]> {
  const uses: RecordedUse[] = [];
  invoices.forEach((invoice, index) => {
    for (const use of planned.uses[index] ?? []) {
      uses.push({
        credit_grant_id: use.credit_grant_id,
        amount: use.amount,
        remaining_after: use.remaining_after,
        org_id: invoice.org_id,
        invoice_id: invoice.id,
      });
    }
  });
  return recordGrantUses(tx, uses);
}

/** What `uses` pay in all. */
export function creditsApplied(uses: readonly GrantUse[]): string {
  return formatMoney(uses.reduce((sum, use) => sum + parseMoney(use.amount), 0n));
}

function unique(customers: { org_id: number; id: number }[]): { org_id: number; id: number }[] {
  return [...new Map(customers.map((customer) => [`${customer.org_id}|${customer.id}`, customer])).values()];
}
