export { getInvoice, type InvoiceFilter, listInvoices } from './invoices.js';
export { listInvoiceTransactions, TRANSACTION_COLUMNS, toInvoiceTransaction } from './transactions.js';
