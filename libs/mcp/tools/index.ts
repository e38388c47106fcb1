import { listAlertsTool } from './alerts.js';
import { listCreditNotesTool } from './credit-notes.js';
import { getCreditBalanceTool } from './credits.js';
import { getCustomerTool, listCustomersTool } from './customers.js';
import { getEntitlementsTool } from './entitlements.js';
import { listInvoicesTool, recentPaymentsTool } from './invoices.js';
import { listProductsTool } from './products.js';
import { revenueSummaryTool } from './revenue.js';
import { taxLookupTool } from './tax.js';
import type { McpTool } from './tool.js';
import { getSubscriptionUsageTool, previewUpcomingInvoiceTool } from './usage.js';

/** Every tool the endpoint offers, in the order tools/list shows them. None can change data. */
export const MCP_TOOLS: readonly McpTool[] = [
  listCustomersTool,
  getCustomerTool,
  listInvoicesTool,
  revenueSummaryTool,
  listProductsTool,
  recentPaymentsTool,
  taxLookupTool,
  getSubscriptionUsageTool,
  previewUpcomingInvoiceTool,
  getCreditBalanceTool,
  listAlertsTool,
  listCreditNotesTool,
  getEntitlementsTool,
];

export type { McpTool, ToolContext } from './tool.js';
