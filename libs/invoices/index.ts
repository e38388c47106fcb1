export {
  HOSTED_INVOICE_PATH,
  type HostedLinkSigning,
  hostedInvoiceToken,
  hostedInvoiceUrl,
  invoiceIdOfHostedToken,
  isHostedTokenOf,
} from './hosted-link.js';
export {
  getInvoice,
  getPublicInvoice,
  type HostedLinks,
  hostedLinksOf,
  type InvoiceFilter,
  listInvoices,
  rotateHostedLink,
  toPublicInvoice,
} from './invoices.js';
export { isOverdue } from './overdue.js';
export { RenderedInvoicePages } from './rendered-pages.js';
export { listInvoiceTransactions, TRANSACTION_COLUMNS, toInvoiceTransaction } from './transactions.js';
