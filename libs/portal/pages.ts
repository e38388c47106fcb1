import {
  displayAmount,
  displayDate,
  displayMoney,
  displayQuantity,
  type Locale,
  type Messages,
  messagesFor,
} from '../i18n/index.js';
import { amountDueOf, escapeHtml, type PrintableInvoice } from '../invoice-documents/index.js';
import { isOverdue } from '../invoices/index.js';
import type { Alert, CreditNote, InvoiceRecord, Subscription } from '../schemas/index.js';
import { renderUsageChart } from './chart.js';
import { PORTAL_CSS_PATH, PORTAL_ICON_PATH } from './stylesheet.js';
import type { PortalCredits, PortalUsage } from './usage-source.js';

/** What the portal's list shows of an invoice. */
export type InvoiceSummary = Pick<
  InvoiceRecord,
  'id' | 'invoice_number' | 'invoice_date' | 'due_date' | 'status' | 'total' | 'balance' | 'currency'
>;

/*
 * The pages people open from a portal or hosted invoice link: server-rendered HTML, no script,
 * no inline style (CSP default-src 'self'), one stylesheet of our own. Every value from the
 * database goes through escapeHtml. Links are absolute under the base the links were made with
 * (PUBLIC_URL) and carry the page's language, so a reader who switched stays in it.
 */

const html = escapeHtml;

/** A link to `path` under `base`, in `locale`. */
export function pageLink(base: string, path: string, locale: Locale): string {
  return `${base}${path}?locale=${encodeURIComponent(locale)}`;
}

interface Layout {
  locale: Locale;
  base: string;
  title: string;
  /** The organization whose customer reads the page. */
  organization?: string;
  /** The same page in the other language. */
  switchPath?: string;
  main: string;
  footer?: string;
}

function layout({ locale, base, title, organization, switchPath, main, footer }: Layout): string {
  const m = messagesFor(locale);
  const language = switchPath
    ? `<a href="${html(pageLink(base, switchPath, m.languageCode))}" hreflang="${m.languageCode}" lang="${m.languageCode}">${html(m.language)}</a>`
    : '';
  return `<!doctype html>
<html lang="${locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${html(title)}</title>
<link rel="stylesheet" href="${html(base + PORTAL_CSS_PATH)}">
<link rel="icon" href="${html(base + PORTAL_ICON_PATH)}" type="image/svg+xml">
</head>
<body>
<a class="skip" href="#main">${html(m.skipToContent)}</a>
<header class="top"><div class="wrap"><span class="org">${html(organization ?? '')}</span>${language}</div></header>
<main id="main" class="wrap" tabindex="-1">
${main}
</main>
<footer class="bottom">${footer ?? ''}</footer>
</body>
</html>
`;
}

function statusBadge(invoice: InvoiceSummary, m: Messages, today: string): string {
  const overdue = isOverdue(invoice, today);
  const kind = overdue ? 'overdue' : invoice.status === 'PAID' ? 'paid' : '';
  const text = overdue
    ? `${m.invoiceStatus[invoice.status]} · ${m.overdue}`
    : m.invoiceStatus[invoice.status];
  return `<span class="status ${kind}">${html(text)}</span>`;
}

/** Where an invoice's page and documents are, from a portal session or a hosted link. */
export interface InvoiceLinks {
  /** The invoice's page (path below the base). */
  page: string;
  printable: string;
  pdf: string;
}

export interface PortalHome {
  locale: Locale;
  base: string;
  /** The page's own path below the base (for the language switch). */
  path: string;
  organization: string;
  customerName: string;
  expiresAt: Date;
  today: string;
  subscriptions: Subscription[];
  /** Per subscription id; `unavailable` when no usage source is wired in. */
  usage: Map<number, PortalUsage> | 'unavailable';
  invoices: InvoiceSummary[];
  linksOf: (invoice: InvoiceSummary) => InvoiceLinks;
  /** The customer's prepaid credits; undefined when no source is wired in. */
  credits?: PortalCredits | undefined;
  /** The customer's spend alerts and the form that adds one; undefined when not offered. */
  alerts?: PortalAlertsView | undefined;
  /** The customer's credit notes, newest first, with where their documents are. */
  creditNotes?: { notes: CreditNote[]; linksOf: (note: CreditNote) => { printable: string; pdf: string } };
}

export interface PortalAlertsView {
  list: Alert[];
  /** The customer's subscriptions an alert can be put on. */
  subscriptions: { id: number; title: string }[];
  /** The session's CSRF token, carried by every form. */
  csrf: string;
  /** Where the add form posts, and where a remove form posts for one alert. */
  addPath: string;
  removePath: (alertId: string) => string;
  /** Why the last add was refused, shown above the form. */
  refused?: string | undefined;
}

function subscriptionSection(
  subscription: Subscription,
  usage: PortalUsage | undefined,
  view: PortalHome,
  m: Messages,
): string {
  const { locale } = view;
  const items = subscription.items
    .map(
      (item) =>
        `<tr><td>${html(item.product_name)}</td><td>${html(item.usage_type === 'metered' ? m.metered : m.licensed)}</td><td class="num">${
          item.usage_type === 'metered'
            ? html(displayQuantity(item.included_units, locale))
            : html(displayQuantity(String(item.quantity), locale))
        }</td></tr>`,
    )
    .join('');
  const hasMetered = subscription.items.some((item) => item.usage_type === 'metered');
  let usageHtml = '';
  if (hasMetered && view.usage === 'unavailable') {
    usageHtml = `<p class="note">${html(m.usageUnavailable)}</p>`;
  } else if (usage) {
    usageHtml = usage.usage.items
      .map((item) => {
        const series = usage.daily
          .filter((day) => day.subscription_item_id === item.subscription_item_id)
          .map(({ date, quantity }) => ({ date, quantity }));
        return `<h3>${html(m.usageOf(item.product_name))}</h3>
${item.amount === null ? '' : `<p>${html(m.amountSoFar(displayMoney(item.amount, usage.usage.currency, locale)))}</p>`}
${renderUsageChart(series, { locale, itemName: item.product_name, id: `usage-${item.subscription_item_id}` })}`;
      })
      .join('\n');
    if (usage.upcoming) {
      const upcoming = usage.upcoming;
      usageHtml += `<h3>${html(m.upcomingInvoice)} · ${html(displayDate(upcoming.invoice_date, locale))}</h3>
<table><thead><tr><th scope="col">${html(m.description)}</th><th scope="col" class="num">${html(m.quantity)}</th><th scope="col" class="num">${html(m.amount)}</th></tr></thead><tbody>${upcoming.lines
        .map(
          (line) =>
            `<tr><td>${html(line.description)}</td><td class="num">${html(displayQuantity(line.quantity, locale))}</td><td class="num">${html(displayMoney(line.amount, upcoming.currency, locale))}</td></tr>`,
        )
        .join('')}</tbody></table>
<table class="totals"><tr><td>${html(m.subtotal)}</td><td class="num">${html(displayMoney(upcoming.subtotal, upcoming.currency, locale))}</td></tr><tr><td>${html(m.tax)}</td><td class="num">${html(displayMoney(upcoming.tax, upcoming.currency, locale))}</td></tr><tr class="grand"><td>${html(m.total)}</td><td class="num">${html(displayMoney(upcoming.total, upcoming.currency, locale))}</td></tr>${
        /[1-9]/.test(upcoming.credits_applied)
          ? `<tr><td>${html(m.creditsApplied)}</td><td class="num">${html(displayMoney(`-${upcoming.credits_applied}`, upcoming.currency, locale))}</td></tr><tr class="grand"><td>${html(m.amountDue)}</td><td class="num">${html(displayMoney(upcoming.amount_due, upcoming.currency, locale))}</td></tr>`
          : ''
      }</table>`;
    }
  }
  if (
    view.usage === 'unavailable' &&
    subscription.status !== 'canceled' &&
    subscription.status !== 'expired'
  ) {
    usageHtml += `<p class="note">${html(m.upcomingUnavailable)}</p>`;
  }
  return `<article>
<h3>${html(subscription.title)} <span class="status">${html(m.subscriptionStatus[subscription.status])}</span></h3>
<p class="lead">${html(m.currentPeriod(displayDate(subscription.current_period_start, locale), displayDate(subscription.current_period_end, locale)))}</p>
<table><thead><tr><th scope="col">${html(m.item)}</th><th scope="col">${html(m.itemKind)}</th><th scope="col" class="num">${html(m.quantity)} / ${html(m.includedUnits)}</th></tr></thead><tbody>${items}</tbody></table>
${usageHtml}
</article>`;
}

/** The customer's prepaid credits: what is available, what is projected, each grant and its expiry. */
function creditsSection(credits: PortalCredits, locale: Locale, m: Messages): string {
  const money = (amount: string) => html(displayMoney(amount, credits.currency, locale));
  const rows = credits.grants
    .map(
      (grant) =>
        `<tr><td>${html(grant.name)}</td><td>${html(m.creditStatus[grant.status])}</td><td class="num">${money(grant.remaining)} / ${money(grant.amount)}</td><td>${html(grant.expires_at ? displayDate(grant.expires_at, locale) : m.creditNeverExpires)}</td></tr>`,
    )
    .join('');
  return `<section class="card" aria-labelledby="credits"><h2 id="credits">${html(m.credits)}</h2>
${
  credits.available === null || credits.projected === null
    ? ''
    : `<table class="totals"><tr><td>${html(m.creditsAvailable)}</td><td class="num">${money(credits.available)}</td></tr><tr><td>${html(m.creditsProjected)}</td><td class="num">${money(credits.projected)}</td></tr></table>`
}
${
  credits.grants.length === 0
    ? `<p class="note">${html(m.creditsNone)}</p>`
    : `<table><thead><tr><th scope="col">${html(m.creditGrant)}</th><th scope="col">${html(m.status)}</th><th scope="col" class="num">${html(m.creditRemaining)}</th><th scope="col">${html(m.creditExpires)}</th></tr></thead><tbody>${rows}</tbody></table>`
}
</section>`;
}

/** The customer's credit notes: number, date, invoice, total, and their printable HTML and PDF. */
function creditNotesSection(view: PortalHome, m: Messages): string {
  const { locale, base } = view;
  const notes = view.creditNotes?.notes ?? [];
  const numberOf = new Map(view.invoices.map((invoice) => [invoice.id, invoice.invoice_number]));
  const rows = notes
    .map((note) => {
      const links = view.creditNotes!.linksOf(note);
      return `<tr>
<th scope="row">${html(note.number)}</th>
<td>${html(displayDate(note.created_at, locale))}</td>
<td>${html(numberOf.get(note.invoice_id) ?? '')}</td>
<td>${html(m.creditNoteReasons[note.reason] ?? note.reason)}</td>
<td class="num">${html(displayMoney(note.total, note.currency, locale))}</td>
<td class="docs"><a href="${html(pageLink(base, links.printable, locale))}" aria-label="${html(m.printableCreditNoteOf(note.number))}">${html(m.printable)}</a><a href="${html(pageLink(base, links.pdf, locale))}" aria-label="${html(m.creditNotePdfOf(note.number))}" download>${html(m.pdf)}</a></td>
</tr>`;
    })
    .join('\n');
  return `<section class="card" aria-labelledby="credit-notes"><h2 id="credit-notes">${html(m.creditNotes)}</h2>
${
  notes.length === 0
    ? `<p class="note">${html(m.noCreditNotes)}</p>`
    : `<table>
<thead><tr><th scope="col">${html(m.creditNoteNumber)}</th><th scope="col">${html(m.creditNoteDate)}</th><th scope="col">${html(m.creditedInvoice)}</th><th scope="col">${html(m.reason)}</th><th scope="col" class="num">${html(m.totalCredited)}</th><th scope="col">${html(m.documents)}</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`
}
</section>`;
}

/**
 * The customer's alerts; usage_amount ones can be removed, and one added on a subscription. Money
 * figures print in their currency's minor unit where it is known (`currencyOf`), else with cents.
 */
function alertsSection(
  view: PortalAlertsView,
  currencyOf: (alert: Alert) => string | undefined,
  base: string,
  locale: Locale,
  m: Messages,
): string {
  const csrf = `<input type="hidden" name="csrf" value="${html(view.csrf)}">`;
  const rows = view.list
    .map((alert) => {
      const label = alert.name || m.alertMetric[alert.metric]!;
      const removable = alert.metric === 'usage_amount';
      const money = alert.metric !== 'usage_quantity';
      const shown = (value: string) =>
        html(money ? displayAmount(value, locale, currencyOf(alert)) : displayQuantity(value, locale));
      return `<tr><td>${html(label)}</td><td>${html(m.alertMetric[alert.metric]!)}</td><td class="num">${shown(alert.threshold)}</td><td class="num">${alert.value === null ? '' : shown(alert.value)}</td><td>${html(m.alertStatus[alert.status]!)}</td><td>${
        removable
          ? `<form method="post" action="${html(pageLink(base, view.removePath(alert.id), locale))}">${csrf}<button type="submit" aria-label="${html(m.removeAlert(label))}">${html(m.remove)}</button></form>`
          : ''
      }</td></tr>`;
    })
    .join('');
  const options = view.subscriptions
    .map((subscription) => `<option value="${subscription.id}">${html(subscription.title)}</option>`)
    .join('');
  return `<section class="card" aria-labelledby="alerts"><h2 id="alerts">${html(m.alerts)}</h2>
<p class="lead">${html(m.alertsIntro)}</p>
${
  view.list.length === 0
    ? `<p class="note">${html(m.noAlerts)}</p>`
    : `<table><thead><tr><th scope="col">${html(m.alertName.replace(/ \(.*\)$/, ''))}</th><th scope="col">${html(m.alertWatches)}</th><th scope="col" class="num">${html(m.alertThreshold)}</th><th scope="col" class="num">${html(m.alertNow)}</th><th scope="col">${html(m.status)}</th><th scope="col"></th></tr></thead><tbody>${rows}</tbody></table>`
}
${view.refused ? `<p class="note" role="alert">${html(m.alertRefused + view.refused)}</p>` : ''}
${
  view.subscriptions.length === 0
    ? ''
    : `<form method="post" action="${html(pageLink(base, view.addPath, locale))}" class="alert-form">${csrf}
<label>${html(m.alertSubscription)} <select name="subscription_id">${options}</select></label>
<label>${html(m.alertThreshold)} <input name="threshold" inputmode="decimal" required></label>
<label>${html(m.alertName)} <input name="name" maxlength="255"></label>
<button type="submit">${html(m.addAlert)}</button>
</form>`
}
</section>`;
}

/** The portal's one page: subscriptions and their usage, then every invoice with its documents. */
/** A usage_amount alert's figures are its subscription's usage currency; credit_balance's the credits'. */
function alertCurrency(view: PortalHome, alert: Alert): string | undefined {
  if (alert.metric === 'credit_balance') return view.credits?.currency || undefined;
  return view.usage === 'unavailable' ? undefined : view.usage.get(alert.subscription_id)?.usage.currency;
}

export function renderPortalHome(view: PortalHome): string {
  const { locale, base } = view;
  const m = messagesFor(locale);
  const subscriptions =
    view.subscriptions.length === 0
      ? `<p class="note">${html(m.noSubscriptions)}</p>`
      : view.subscriptions
          .map((s) =>
            subscriptionSection(s, view.usage === 'unavailable' ? undefined : view.usage.get(s.id), view, m),
          )
          .join('\n');
  const invoiceRows = view.invoices
    .map((invoice) => {
      const links = view.linksOf(invoice);
      const money = (amount: string) => html(displayMoney(amount, invoice.currency, locale));
      return `<tr>
<th scope="row"><a href="${html(pageLink(base, links.page, locale))}" aria-label="${html(m.viewInvoice(invoice.invoice_number))}">${html(invoice.invoice_number)}</a></th>
<td class="hide-narrow">${html(displayDate(invoice.invoice_date, locale))}</td>
<td>${statusBadge(invoice, m, view.today)}</td>
<td class="num">${money(invoice.total)}</td>
<td class="num">${money(amountDueOf(invoice))}</td>
<td>${html(displayDate(invoice.due_date, locale))}</td>
<td class="docs"><a href="${html(pageLink(base, links.printable, locale))}" aria-label="${html(m.printableOf(invoice.invoice_number))}">${html(m.printable)}</a><a href="${html(pageLink(base, links.pdf, locale))}" aria-label="${html(m.pdfOf(invoice.invoice_number))}" download>${html(m.pdf)}</a></td>
</tr>`;
    })
    .join('\n');
  const invoices =
    view.invoices.length === 0
      ? `<p class="note">${html(m.noInvoices)}</p>`
      : `<table>
<thead><tr><th scope="col">${html(m.invoiceNumber)}</th><th scope="col" class="hide-narrow">${html(m.invoiceDate)}</th><th scope="col">${html(m.status)}</th><th scope="col" class="num">${html(m.total)}</th><th scope="col" class="num">${html(m.balanceDue)}</th><th scope="col">${html(m.dueDate)}</th><th scope="col">${html(m.documents)}</th></tr></thead>
<tbody>
${invoiceRows}
</tbody>
</table>`;
  return layout({
    locale,
    base,
    title: m.portalTitle(view.customerName),
    organization: view.organization,
    switchPath: view.path,
    main: `<h1>${html(m.portalTitle(view.customerName))}</h1>
<p class="lead">${html(m.portalIntro(view.organization))}</p>
<section class="card" aria-labelledby="subscriptions"><h2 id="subscriptions">${html(m.subscriptions)}</h2>
${subscriptions}
</section>
${view.credits ? creditsSection(view.credits, locale, m) : ''}
${view.alerts ? alertsSection(view.alerts, (alert) => alertCurrency(view, alert), base, locale, m) : ''}
<section class="card" aria-labelledby="invoices"><h2 id="invoices">${html(m.invoices)}</h2>
${invoices}
</section>
${view.creditNotes ? creditNotesSection(view, m) : ''}`,
    footer: html(m.sessionExpires(displayDate(view.expiresAt.toISOString(), locale))),
  });
}

export interface InvoicePage {
  base: string;
  /** The page's own path below the base (for the language switch). */
  path: string;
  printable: PrintableInvoice;
  links: InvoiceLinks;
  /** Back to the portal's home, when opened from a portal session. */
  back?: string;
  footer: string;
}

/** One invoice for its customer: what it bills, what is left to pay, its printable HTML and PDF. */
export function renderInvoicePage({ base, path, printable, links, back, footer }: InvoicePage): string {
  const { locale, invoice, seller, customer, subtotal, taxLines, overdue } = printable;
  const m = messagesFor(locale);
  const money = (amount: string) => html(displayMoney(amount, invoice.currency, locale));
  const status = overdue
    ? `${m.invoiceStatus[invoice.status]} · ${m.overdue}`
    : m.invoiceStatus[invoice.status];
  const rows = invoice.items
    .map(
      (item) =>
        `<tr><td>${html(item.description)}</td><td class="num">${html(displayQuantity(item.quantity, locale))}</td><td class="num hide-narrow">${money(item.unit_price)}</td><td class="num">${money(item.line_total_pre_tax)}</td></tr>`,
    )
    .join('\n');
  const taxes = taxLines
    .map(
      (line) =>
        `<tr><td>${html(m.taxNames[line.name] ?? line.name)}</td><td class="num">${money(line.amount)}</td></tr>`,
    )
    .join('');
  return layout({
    locale,
    base,
    title: m.documentTitle(invoice.invoice_number),
    organization: seller.name,
    switchPath: path,
    main: `${back ? `<p><a href="${html(pageLink(base, back, locale))}">← ${html(m.backToPortal)}</a></p>` : ''}
<h1>${html(m.documentTitle(invoice.invoice_number))}</h1>
<p class="lead">${html(customer.name)}</p>
<section class="card" aria-labelledby="summary"><h2 id="summary">${html(m.invoiceDetails)}</h2>
<dl class="facts">
<dt>${html(m.status)}</dt><dd><span class="status${overdue ? ' overdue' : invoice.status === 'PAID' ? ' paid' : ''}">${html(status)}</span></dd>
<dt>${html(m.invoiceDate)}</dt><dd>${html(displayDate(invoice.invoice_date, locale))}</dd>
<dt>${html(m.dueDate)}</dt><dd>${html(displayDate(invoice.due_date, locale))}</dd>
<dt>${html(m.period)}</dt><dd>${html(m.periodRange(displayDate(invoice.period_start, locale), displayDate(invoice.period_end, locale)))}</dd>
<dt>${html(m.total)}</dt><dd>${money(invoice.total)}</dd>
<dt>${html(m.balanceDue)}</dt><dd>${money(printable.amountDue)}</dd>
</dl>
<p class="actions"><a href="${html(pageLink(base, links.pdf, locale))}" download>${html(m.downloadPdf)}</a><a class="secondary" href="${html(pageLink(base, links.printable, locale))}">${html(m.printVersion)}</a></p>
</section>
<section class="card" aria-labelledby="lines"><h2 id="lines">${html(m.lines)}</h2>
<table><thead><tr><th scope="col">${html(m.description)}</th><th scope="col" class="num">${html(m.quantity)}</th><th scope="col" class="num hide-narrow">${html(m.unitPrice)}</th><th scope="col" class="num">${html(m.amount)}</th></tr></thead>
<tbody>
${rows}
</tbody></table>
<table class="totals">
<tr><td>${html(m.subtotal)}</td><td class="num">${money(subtotal)}</td></tr>
${taxes}
<tr><td>${html(taxLines.length > 0 ? m.totalTax : m.tax)}</td><td class="num">${money(invoice.tax_amount)}</td></tr>
<tr class="grand"><td>${html(m.total)}</td><td class="num">${money(invoice.total)}</td></tr>
<tr><td>${html(m.paid)}</td><td class="num">${money(invoice.amount_paid)}</td></tr>
<tr class="grand"><td>${html(m.balanceDue)}</td><td class="num">${money(printable.amountDue)}</td></tr>
</table>
</section>`,
    footer: html(footer),
  });
}

export type ErrorPageKind = 'not-found' | 'expired' | 'revoked' | 'forbidden' | 'unavailable';

/** An error page that says what happened and shows no data at all. */
export function renderErrorPage(kind: ErrorPageKind, locale: Locale, base: string): string {
  const m = messagesFor(locale);
  const [title, text] =
    kind === 'expired'
      ? [m.expiredTitle, m.expiredText]
      : kind === 'revoked'
        ? [m.revokedTitle, m.revokedText]
        : kind === 'not-found'
          ? [m.notFoundTitle, m.notFoundText]
          : kind === 'forbidden'
            ? [m.forbiddenTitle, m.forbiddenText]
            : [m.errorTitle, m.errorText];
  return layout({
    locale,
    base,
    title,
    main: `<div class="error"><h1>${html(title)}</h1><p>${html(text)}</p></div>`,
  });
}
