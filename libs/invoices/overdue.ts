import { parseMoney } from '../money/index.js';
import type { InvoiceRecord as Invoice } from '../schemas/index.js';

/**
 * The spec's derivation, one for every reader (the printable invoice, the portal, MCP): open
 * (POSTED or PARTIALLY_PAID), past its due date (`today` a UTC `YYYY-MM-DD`, the due date itself
 * not yet overdue) and not fully paid.
 */
export function isOverdue(invoice: Pick<Invoice, 'status' | 'due_date' | 'balance'>, today: string): boolean {
  return (
    (invoice.status === 'POSTED' || invoice.status === 'PARTIALLY_PAID') &&
    invoice.due_date < today &&
    parseMoney(invoice.balance) > 0n
  );
}
