export { addPortalAlert, isPortalCsrfToken, removePortalAlert } from './alerts.js';
export { type DailyQuantity, niceCeiling, renderUsageChart } from './chart.js';
export {
  HOSTED_INVOICE_DAYS_AFTER_CLOSE,
  type HostedInvoiceAccess,
  openHostedInvoice,
} from './hosted-invoices.js';
export { type ErrorPageKind, renderErrorPage } from './pages.js';
export {
  invoicePage,
  type PageRequest,
  portalHomePage,
  portalPrintableCreditNote,
  portalPrintableInvoice,
} from './portal.js';
export {
  createPortalSession,
  type NewPortalSession,
  openPortalSession,
  PORTAL_PATH,
  type PortalAccess,
  type PortalSessionRecord,
  revokePortalSession,
} from './sessions.js';
export { PORTAL_CSS, PORTAL_CSS_PATH, PORTAL_ICON, PORTAL_ICON_PATH } from './stylesheet.js';
export { type PortalUsage, type PortalUsageSource, portalUsageSource } from './usage-source.js';
