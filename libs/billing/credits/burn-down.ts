import { formatMoney, parseMoney } from '../../money/index.js';

/**
 * Which credit grants pay an invoice, and how much each (docs/decisions.md, "Credits burn down in
 * one order"), pure: the posting, the upcoming invoice and the credit balance share it, so what the
 * upcoming invoice says credits will pay is what posting it would use.
 *
 * A grant is usable at `at` when it is ACTIVE, in the invoice's currency, effective
 * (`effective_at <= at`) and not expired (`at < expires_at`). Usable grants pay in order: lower
 * `priority` first, then the soonest `expires_at` (none last), then the oldest, then by id. Each
 * pays what it has, up to what the invoice still owes; `applies_to: "usage"` grants together pay at
 * most the invoice's metered lines and their tax. A prepaid-credits invoice is never paid by credits.
 */

export interface BurnableGrant {
  id: string;
  status: 'PENDING' | 'ACTIVE' | 'DEPLETED' | 'EXPIRED' | 'VOIDED';
  currency: string;
  remaining: string;
  priority: number;
  applies_to: 'all' | 'usage';
  effective_at: Date;
  expires_at: Date | null;
  created_at: Date;
}

export interface BurnableInvoice {
  currency: string;
  /** What is still owed (total - amount paid). */
  balance: string;
  /** The metered lines' pre-tax amounts plus their tax: all that `usage` grants may pay. */
  usage_amount: string;
  /** An invoice that sells credits: never paid by them. */
  prepaid_credits: boolean;
}

export interface GrantUse {
  credit_grant_id: string;
  amount: string;
  remaining_after: string;
}

/** Whether a grant may pay an invoice in `currency` at `at`. */
export function isUsable(grant: BurnableGrant, currency: string, at: Date): boolean {
  return (
    grant.status === 'ACTIVE' &&
    grant.currency.trim() === currency.trim() &&
    grant.effective_at.getTime() <= at.getTime() &&
    (grant.expires_at === null || at.getTime() < grant.expires_at.getTime()) &&
    parseMoney(grant.remaining) > 0n
  );
}

/** The burn-down order: priority, soonest expiry (none last), oldest, id. */
export function burnDownOrder(a: BurnableGrant, b: BurnableGrant): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const expiry = (grant: BurnableGrant) => grant.expires_at?.getTime() ?? Number.POSITIVE_INFINITY;
  if (expiry(a) !== expiry(b)) return expiry(a) < expiry(b) ? -1 : 1;
  if (a.created_at.getTime() !== b.created_at.getTime())
    return a.created_at.getTime() - b.created_at.getTime();
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * The uses that pay `invoice` from `grants` at `at`, in burn-down order. `grants` may hold any
 * grants of the customer; the unusable are passed over. The grants are not changed.
 */
export function planBurnDown(
  invoice: BurnableInvoice,
  grants: readonly BurnableGrant[],
  at: Date,
): GrantUse[] {
  if (invoice.prepaid_credits) return [];
  let owed = parseMoney(invoice.balance);
  let usageLeft = parseMoney(invoice.usage_amount);
  const uses: GrantUse[] = [];
  for (const grant of grants.filter((g) => isUsable(g, invoice.currency, at)).sort(burnDownOrder)) {
    if (owed <= 0n) break;
    const remaining = parseMoney(grant.remaining);
    let amount = remaining < owed ? remaining : owed;
    if (grant.applies_to === 'usage') amount = amount < usageLeft ? amount : usageLeft;
    if (amount <= 0n) continue;
    owed -= amount;
    if (grant.applies_to === 'usage') usageLeft -= amount;
    uses.push({
      credit_grant_id: grant.id,
      amount: formatMoney(amount),
      remaining_after: formatMoney(remaining - amount),
    });
  }
  return uses;
}

/**
 * Burn-down over several invoices of one customer in order (a billing run posting a batch): each
 * invoice sees what the ones before it left. Returns the uses per invoice, in the invoices' order.
 */
export function planBurnDowns(
  invoices: readonly BurnableInvoice[],
  grants: readonly BurnableGrant[],
  at: Date,
): GrantUse[][] {
  const left = new Map(grants.map((grant) => [grant.id, { ...grant }]));
  return invoices.map((invoice) => {
    const uses = planBurnDown(invoice, [...left.values()], at);
    for (const use of uses) left.get(use.credit_grant_id)!.remaining = use.remaining_after;
    return uses;
  });
}

/** The total of `uses`. */
export function totalUsed(uses: readonly GrantUse[]): string {
  return formatMoney(uses.reduce((sum, use) => sum + parseMoney(use.amount), 0n));
}
