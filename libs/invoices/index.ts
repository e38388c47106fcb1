export {
  HOSTED_INVOICE_PATH,
  hostedInvoiceToken,
  hostedInvoiceUrl,
  invoiceIdOfHostedToken,
  isHostedTokenOf,
} from './hosted-link.js';
export {
  getInvoice,
  getPublicInvoice,
  hostedLinkKeyOf,
  type InvoiceFilter,
  listInvoices,
  toPublicInvoice,
} from './invoices.js';
export { RenderedInvoicePages } from './rendered-pages.js';
export { listInvoiceTransactions, TRANSACTION_COLUMNS, toInvoiceTransaction } from './transactions.js';
