import {
  type CreditNoteSummary,
  canMoveInvoice,
  creditNoteSummaries,
  federalGstOf,
  federalGstOfSubtotal,
} from '../billing/index.js';
import { getCustomer } from '../customers/index.js';
import type { Queryable } from '../db/index.js';
import type { Locale } from '../i18n/index.js';
import { getInvoice, isOverdue } from '../invoices/index.js';
import { addScaled, formatMoney, isBillableCurrency, isInMinorUnits, parseMoney } from '../money/index.js';
import type { Customer, InvoiceRecord as Invoice, InvoiceItem } from '../schemas/index.js';
import { countryName, pdfFilename } from './format.js';

/** A seller or a buyer as the document prints them: every line is raw database text. */
export interface InvoiceParty {
  name: string;
  contactName: string | null;
  addressLines: string[];
  email: string | null;
  taxId: string | null;
}

/** Everything the HTML and the PDF print, from one load, so the two carry the same content. */
export interface PrintableInvoice {
  /** The language the document is written in; its labels, dates and numbers follow it. */
  locale: Locale;
  invoice: Invoice;
  seller: InvoiceParty;
  customer: InvoiceParty;
  /** Sum of the items' pre-tax line totals. */
  subtotal: string;
  /** The invoice's tax by component (GST, HST, QST, PST, sales tax); the amounts sum to `tax_amount`. */
  taxLines: TaxLine[];
  /** Derived, never a status: POSTED or PARTIALLY_PAID, due date passed, balance above zero. */
  overdue: boolean;
  /** What is left to pay (amountDueOf): the balance while the invoice can be paid, else zero. */
  amountDue: string;
  /** The credit notes issued against it, oldest first (number, date, total). */
  creditNotes?: CreditNoteSummary[];
}

export interface Address {
  address_line1: string | null;
  address_line2: string | null;
  city: string | null;
  state_province: string | null;
  postal_code: string | null;
  country: string | null;
}

export interface SellerRow extends Address {
  name: string;
  email: string | null;
  tax_id: string | null;
}

export function addressLines(address: Address, locale: Locale): string[] {
  const locality = [address.city, [address.state_province, address.postal_code].filter(Boolean).join('  ')]
    .filter(Boolean)
    .join(', ');
  return [
    address.address_line1,
    address.address_line2,
    locality,
    address.country ? countryName(address.country, locale) : null,
  ].filter((line): line is string => Boolean(line?.trim()));
}

export function customerParty(customer: Customer, locale: Locale): InvoiceParty {
  return {
    name: customer.name,
    contactName: customer.contact_name,
    addressLines: addressLines(customer, locale),
    email: customer.email,
    taxId: customer.tax_id,
  };
}

export interface TaxLine {
  /** GST, HST, QST, PST, Sales tax or Tax: a key of the locale's tax names. */
  name: string;
  amount: string;
}

const TAX_ORDER = ['GST', 'HST', 'QST', 'PST', 'Sales tax', 'Tax'];

/**
 * An item's tax split into the components its `tax_type` levies. Billing rounds each component
 * half-even at 8 digits and stores their sum; GST is recomputed exactly so (federalGstOf), and the provincial part
 * is the rest, so the components always sum to the stored tax (Quebec wants GST and QST apart).
 */
function itemTaxComponents(item: InvoiceItem): [string, bigint][] {
  const tax = parseMoney(item.tax_amount);
  const gst = () => parseMoney(federalGstOf(item.line_total_pre_tax));
  switch (item.tax_type) {
    case 'GST_QST':
    case 'GST_PST': {
      const federal = gst();
      return [
        ['GST', federal],
        [item.tax_type === 'GST_QST' ? 'QST' : 'PST', tax - federal],
      ];
    }
    case 'GST':
    case 'HST':
      return [[item.tax_type, tax]];
    case 'US_SALES_TAX':
      return [['Sales tax', tax]];
    default:
      return tax === 0n ? [] : [['Tax', tax]];
  }
}

/**
 * The invoice's tax by component, in a fixed order; components that levy nothing are left out.
 * Invoices with payable amounts (docs/architecture.md, "Money": every line and tax in the minor unit) computed each
 * component once on the subtotal: GST is recomputed so, the provincial part is the rest. Older
 * invoices split line by line, as they were computed.
 */
export function taxLinesOf(invoice: Invoice): TaxLine[] {
  const sums = new Map<string, bigint>();
  // an invoice in a currency without a known minor unit was made before payable amounts
  const payable = invoice.items.every(
    (item) =>
      isBillableCurrency(invoice.currency) &&
      isInMinorUnits(parseMoney(item.line_total_pre_tax), invoice.currency) &&
      isInMinorUnits(parseMoney(item.tax_amount), invoice.currency),
  );
  const split = invoice.items.filter((item) => item.tax_type === 'GST_QST' || item.tax_type === 'GST_PST');
  if (payable && split.length > 0 && split.length === invoice.items.length) {
    const subtotal = split.reduce((sum, item) => sum + parseMoney(item.line_total_pre_tax), 0n);
    const tax = split.reduce((sum, item) => sum + parseMoney(item.tax_amount), 0n);
    const gst = parseMoney(federalGstOfSubtotal(formatMoney(subtotal), invoice.currency));
    sums.set('GST', gst);
    sums.set(split[0]!.tax_type === 'GST_QST' ? 'QST' : 'PST', tax - gst);
  } else {
    for (const item of invoice.items) {
      for (const [name, amount] of itemTaxComponents(item)) sums.set(name, (sums.get(name) ?? 0n) + amount);
    }
  }
  return TAX_ORDER.filter((name) => sums.get(name) !== undefined && sums.get(name) !== 0n).map((name) => ({
    name,
    amount: formatMoney(sums.get(name)!),
  }));
}

/**
 * What the customer still owes on an invoice: its balance while a payment can still settle it
 * (the invoice state machine lets it become PAID), else nothing. A withdrawn or refunded invoice
 * keeps a balance (total - amount paid, as the API reports it) that nobody is asked to pay.
 */
export function amountDueOf(invoice: Pick<Invoice, 'status' | 'balance'>): string {
  const collectible = canMoveInvoice(invoice.status, 'PAID') && parseMoney(invoice.balance) > 0n;
  return collectible ? invoice.balance : formatMoney(0n);
}

/**
 * Loads an invoice of the organization with its customer and the organization as seller; 404
 * exactly as GET /invoices/{id} when the invoice is missing or another organization's.
 */
export async function loadPrintableInvoice(
  db: Queryable,
  orgId: number,
  invoiceId: string,
  { locale = 'en', now = new Date() }: { locale?: Locale; now?: Date } = {},
): Promise<PrintableInvoice> {
  const invoice = await getInvoice(db, orgId, invoiceId);
  const [customer, seller, creditNotes] = await Promise.all([
    getCustomer(db, orgId, invoice.customer_id),
    // the organization is the seller: its own address and tax registration head the document
    db.query<SellerRow>(
      `SELECT name, email, address_line1, address_line2, city, state_province, postal_code, country, tax_id
         FROM organizations WHERE id = $1`,
      [orgId],
    ),
    creditNoteSummaries(db, orgId, invoice.id),
  ]);
  const sellerRow = seller.rows[0]!;
  return {
    locale,
    invoice,
    seller: {
      name: sellerRow.name,
      contactName: null,
      addressLines: addressLines(sellerRow, locale),
      email: sellerRow.email,
      taxId: sellerRow.tax_id,
    },
    customer: customerParty(customer, locale),
    subtotal: formatMoney(addScaled(...invoice.items.map((item) => parseMoney(item.line_total_pre_tax)))),
    taxLines: taxLinesOf(invoice),
    overdue: isOverdue(invoice, now.toISOString().slice(0, 10)),
    amountDue: amountDueOf(invoice),
    creditNotes,
  };
}

/** `<invoice_number>.pdf`, safe inside a quoted Content-Disposition filename. */
export function invoicePdfFilename(invoiceNumber: string): string {
  return pdfFilename(invoiceNumber, 'invoice');
}
