export { getInvoice, type InvoiceFilter, listInvoices } from './invoices.js';
export { RenderedInvoicePages } from './rendered-pages.js';
export { listInvoiceTransactions, TRANSACTION_COLUMNS, toInvoiceTransaction } from './transactions.js';
