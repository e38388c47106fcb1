import { getCreditNote } from '../billing/index.js';
import { getCustomer } from '../customers/index.js';
import type { Queryable } from '../db/index.js';
import type { Locale } from '../i18n/index.js';
import type { CreditNote } from '../schemas/index.js';
import { pdfFilename } from './format.js';
import { addressLines, customerParty, type InvoiceParty, type SellerRow } from './printable-invoice.js';

/** Everything a credit note's HTML and PDF print, from one load (as PrintableInvoice). */
export interface PrintableCreditNote {
  locale: Locale;
  note: CreditNote;
  /** The credited invoice's number and date. */
  invoice: { invoice_number: string; invoice_date: string };
  seller: InvoiceParty;
  customer: InvoiceParty;
}

/** The note's tax component names as the documents' tax names (libs/i18n `taxNames`). */
export function taxNameOf(component: string): string {
  if (component === 'STATE_SALES_TAX') return 'Sales tax';
  if (component === 'TAX') return 'Tax';
  return component;
}

/** 404 exactly as GET /credit-notes/{id} when the note is missing or another organization's. */
export async function loadPrintableCreditNote(
  db: Queryable,
  orgId: number,
  noteId: string,
  { locale = 'en' }: { locale?: Locale } = {},
): Promise<PrintableCreditNote> {
  const note = await getCreditNote(db, orgId, noteId);
  const [customer, seller, invoice] = await Promise.all([
    getCustomer(db, orgId, note.customer_id),
    db.query<SellerRow>(
      `SELECT name, email, address_line1, address_line2, city, state_province, postal_code, country, tax_id
         FROM organizations WHERE id = $1`,
      [orgId],
    ),
    db.query<{ invoice_number: string; invoice_date: string }>(
      `SELECT invoice_number, to_char(invoice_date, 'YYYY-MM-DD') AS invoice_date FROM invoices
        WHERE org_id = $1 AND id = $2`,
      [orgId, note.invoice_id],
    ),
  ]);
  const sellerRow = seller.rows[0]!;
  return {
    locale,
    note,
    invoice: invoice.rows[0]!,
    seller: {
      name: sellerRow.name,
      contactName: null,
      addressLines: addressLines(sellerRow, locale),
      email: sellerRow.email,
      taxId: sellerRow.tax_id,
    },
    customer: customerParty(customer, locale),
  };
}

/** `<number>.pdf`, safe inside a quoted Content-Disposition filename. */
export function creditNotePdfFilename(number: string): string {
  return pdfFilename(number, 'credit-note');
}
