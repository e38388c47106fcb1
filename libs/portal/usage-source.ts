/**
 * The current usage and the upcoming invoice the portal shows for one subscription. The portal
 * does not compute them: they come from the usage read-back (DESIGN §9.1), whose objects these
 * shapes follow field for field, through this one interface. Until a source is given the portal
 * says the figures are not available; it never shows figures of its own making.
 */
export interface PortalUsageSource {
  /** undefined: nothing to show for this subscription (no metered item, or not available). */
  read(orgId: number, subscriptionId: number): Promise<PortalUsage | undefined>;
}

export interface PortalUsage {
  /** GET /subscriptions/{id}/usage (period=current). */
  usage: {
    period_start: string;
    period_end: string;
    as_of: string;
    currency: string;
    items: {
      subscription_item_id: number;
      product_name: string;
      unit_label: string | null;
      quantity: string;
      included_units: string;
      billable_quantity: string;
      /** What the billing run would charge now, before tax; null when the source does not price. */
      amount: string | null;
    }[];
  };
  /** GET /subscriptions/{id}/usage/daily over the period (UTC days, zero days included). */
  daily: { date: string; subscription_item_id: number; quantity: string }[];
  /** GET /subscriptions/{id}/upcoming-invoice; null when the source has none. */
  upcoming: {
    invoice_date: string;
    currency: string;
    lines: { description: string; quantity: string; unit_price: string; amount: string }[];
    subtotal: string;
    tax: string;
    total: string;
  } | null;
}
