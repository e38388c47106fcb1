import type { Queryable } from '../db/index.js';
import { defaultLocaleOf, type Locale } from '../i18n/index.js';
import { invoiceIdOfHostedToken, isHostedTokenOf } from '../invoices/index.js';

/** A hosted invoice page stays open this long after the invoice is paid, withdrawn or refunded. */
export const HOSTED_INVOICE_DAYS_AFTER_CLOSE = 90;
const DAY_MS = 86_400_000;

export type HostedInvoiceAccess =
  | {
      kind: 'granted';
      orgId: number;
      customerId: number;
      invoiceId: string;
      locale: Locale;
      /** When the link stops working; null while the invoice is still collectible. */
      validUntil: Date | null;
    }
  | { kind: 'expired' }
  | { kind: 'unknown' };

/**
 * The invoice a hosted link opens. A link whose signature does not check out, or that names an
 * invoice never issued (a draft, or a draft withdrawn before posting), opens nothing; one of an
 * invoice closed more than 90 days ago has expired.
 */
export async function openHostedInvoice(
  db: Queryable,
  token: string,
  now = new Date(),
): Promise<HostedInvoiceAccess> {
  const invoiceId = invoiceIdOfHostedToken(token);
  if (!invoiceId) return { kind: 'unknown' };
  const { rows } = await db.query<{
    org_id: number;
    customer_id: number;
    posted_at: Date | null;
    closed_at: Date | null;
    hosted_link_key: Buffer;
    hosted_link_generation: number;
    country: string;
    state_province: string | null;
  }>(
    `SELECT i.org_id, i.customer_id, i.posted_at, i.closed_at, o.hosted_link_key, i.hosted_link_generation,
            c.country, c.state_province
       FROM invoices i
       JOIN organizations o ON o.id = i.org_id
       JOIN customers c ON c.org_id = i.org_id AND c.id = i.customer_id
      WHERE i.id = $1`,
    [invoiceId],
  );
  const invoice = rows[0];
  if (
    !invoice ||
    !isHostedTokenOf(token, { key: invoice.hosted_link_key, generation: invoice.hosted_link_generation }) ||
    invoice.posted_at === null
  ) {
    return { kind: 'unknown' };
  }
  const validUntil = invoice.closed_at
    ? new Date(invoice.closed_at.getTime() + HOSTED_INVOICE_DAYS_AFTER_CLOSE * DAY_MS)
    : null;
  if (validUntil && validUntil.getTime() <= now.getTime()) return { kind: 'expired' };
  return {
    kind: 'granted',
    orgId: Number(invoice.org_id),
    customerId: Number(invoice.customer_id),
    invoiceId,
    locale: defaultLocaleOf(invoice),
    validUntil,
  };
}
