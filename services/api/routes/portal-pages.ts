import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError } from '../../../libs/errors/index.js';
import { isLocale, type Locale, localeFromAcceptLanguage } from '../../../libs/i18n/index.js';
import {
  creditNotePdfFilename,
  INVOICE_STYLE_SOURCE,
  invoicePdfFilename,
  type PrintableInvoice,
  renderCreditNoteHtml,
  renderCreditNotePdf,
  renderInvoiceHtml,
  renderInvoicePdf,
} from '../../../libs/invoice-documents/index.js';
import {
  addPortalAlert,
  type ErrorPageKind,
  type HostedInvoiceAccess,
  invoicePage,
  isPortalCsrfToken,
  openHostedInvoice,
  openPortalSession,
  PORTAL_CSS,
  PORTAL_CSS_PATH,
  PORTAL_ICON,
  PORTAL_ICON_PATH,
  PORTAL_PATH,
  type PortalAccess,
  portalHomePage,
  portalPrintableCreditNote,
  portalPrintableInvoice,
  removePortalAlert,
  renderErrorPage,
} from '../../../libs/portal/index.js';
import { canonicalUuid } from '../../../libs/schemas/index.js';
import { pagesBaseUrlOf } from '../public-url.js';

/*
 * The pages for the people who pay (docs/architecture.md, "Customer portal"), at PORTAL_PATH below the site root: no API key,
 * a token in the path instead. Every response here, pages, documents, errors and the stylesheet,
 * carries the headers below; the access log records the route pattern, never the token.
 */
const PAGE_HEADERS = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'X-Robots-Tag': 'noindex, nofollow',
  // the alerts card's forms post to the portal itself, and nowhere else
  'Content-Security-Policy':
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
} as const;
/** The printable invoice is one self-contained file: its inline stylesheet, by hash, and nothing else. */
const PRINTABLE_CSP = `default-src 'self'; style-src ${INVOICE_STYLE_SOURCE}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

type Query = { locale?: unknown };
type TokenParams = { token: string };
type InvoiceParams = { token: string; invoice_id: string };
type CreditNoteParams = { token: string; credit_note_id: string };

/** The page's language: ?locale= when it names one, else `fallback`. */
function localeOf(request: FastifyRequest, fallback: Locale): Locale {
  const asked = (request.query as Query).locale;
  return isLocale(asked) ? asked : fallback;
}

/** Before we know whose page it is: ?locale=, else the browser's preference of French or English. */
function visitorLocale(request: FastifyRequest): Locale {
  return localeOf(request, localeFromAcceptLanguage(request.headers['accept-language']));
}

function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

function sendError(request: FastifyRequest, reply: FastifyReply, kind: ErrorPageKind): FastifyReply {
  const status =
    kind === 'expired' || kind === 'revoked'
      ? 410
      : kind === 'not-found'
        ? 404
        : kind === 'forbidden'
          ? 403
          : 503;
  return sendPage(reply, status, renderErrorPage(kind, visitorLocale(request), pagesBaseUrlOf(request)));
}

async function sendDocument(
  reply: FastifyReply,
  printable: PrintableInvoice,
  format: 'html' | 'pdf',
): Promise<FastifyReply> {
  if (format === 'html') {
    return reply
      .header('Content-Security-Policy', PRINTABLE_CSP)
      .type('text/html; charset=utf-8')
      .send(renderInvoiceHtml(printable));
  }
  const pdf = await renderInvoicePdf(printable);
  return reply
    .header(
      'Content-Disposition',
      `attachment; filename="${invoicePdfFilename(printable.invoice.invoice_number)}"`,
    )
    .type('application/pdf')
    .send(pdf);
}

/** The page a link that opens nothing gets: 410 for one that worked once, 404 for anything else. */
function refusalPage(kind: 'expired' | 'revoked' | 'unknown'): ErrorPageKind {
  return kind === 'unknown' ? 'not-found' : kind;
}

/** GET /portal/... at the site root (outside the JSON API and its OpenAPI document). */
export const portalPageRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db, log } = app.deps.platform;
  const usageSource = app.deps.portalUsage;
  const route = { config: { auth: 'none' as const }, schema: { hide: true } };

  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(PAGE_HEADERS);
  });
  // Pages answer pages, never the JSON error body; what failed goes to the log (without the path).
  app.setErrorHandler((error, request, reply) => {
    log.error({ err: error, reqId: request.id, route: request.routeOptions.url }, 'portal page failed');
    return sendError(request, reply, 'unavailable');
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, 'not-found'));

  app.get(PORTAL_CSS_PATH.slice(PORTAL_PATH.length), route, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').send(PORTAL_CSS),
  );
  app.get(PORTAL_ICON_PATH.slice(PORTAL_PATH.length), route, async (_request, reply) =>
    reply.type('image/svg+xml').send(PORTAL_ICON),
  );

  // --- a portal session: one customer's home page and their invoices ---
  app.get<{ Params: TokenParams }>('/:token', route, async (request, reply) => {
    const access = await openPortalSession(db, request.params.token);
    if (access.kind !== 'granted') return sendError(request, reply, refusalPage(access.kind));
    const page = await portalHomePage(db, access, request.params.token, {
      base: pagesBaseUrlOf(request),
      locale: localeOf(request, access.locale),
      usageSource,
      alerts: {},
    });
    return sendPage(reply, 200, page);
  });

  // --- the portal's one write: the customer's usage_amount alerts (libs/portal/alerts.ts) ---
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );
  /** The session of a form's page, its CSRF token checked; undefined once a refusal page is sent. */
  const formSession = async (request: FastifyRequest<{ Params: TokenParams }>, reply: FastifyReply) => {
    const access = await openPortalSession(db, request.params.token);
    if (access.kind !== 'granted') {
      sendError(request, reply, refusalPage(access.kind));
      return undefined;
    }
    const form = (request.body ?? {}) as Record<string, unknown>;
    if (!isPortalCsrfToken(request.params.token, form.csrf)) {
      sendError(request, reply, 'forbidden');
      return undefined;
    }
    return { access, form };
  };
  const backHome = (request: FastifyRequest<{ Params: TokenParams }>, reply: FastifyReply) => {
    const locale = (request.query as Query).locale;
    const query = isLocale(locale) ? `?locale=${locale}` : '';
    return reply.redirect(`${PORTAL_PATH}/${request.params.token}${query}`, 303);
  };
  app.post<{ Params: TokenParams }>('/:token/alerts', route, async (request, reply) => {
    const session = await formSession(request, reply);
    if (!session) return reply;
    try {
      await addPortalAlert(db, app.deps.usageRead, session.access, session.form);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'NOT_FOUND')
        return sendError(request, reply, 'not-found');
      if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR') throw error;
      const refused = (error.details ?? []).map((detail) => `${detail.field}: ${detail.message}`).join('; ');
      const page = await portalHomePage(db, session.access, request.params.token, {
        base: pagesBaseUrlOf(request),
        locale: localeOf(request, session.access.locale),
        usageSource,
        alerts: { refused },
      });
      return sendPage(reply, 422, page);
    }
    return backHome(request, reply);
  });
  app.post<{ Params: TokenParams & { alert_id: string } }>(
    '/:token/alerts/:alert_id/delete',
    route,
    async (request, reply) => {
      const session = await formSession(request, reply);
      if (!session) return reply;
      try {
        await removePortalAlert(db, session.access, canonicalUuid(request.params.alert_id));
      } catch (error) {
        if (error instanceof ApiError && error.code === 'NOT_FOUND')
          return sendError(request, reply, 'not-found');
        throw error;
      }
      return backHome(request, reply);
    },
  );

  /** The invoice a granted link opens with the page's language, or undefined once the refusal page is sent. */
  const openInvoice = async <A extends PortalAccess | HostedInvoiceAccess>(
    request: FastifyRequest,
    reply: FastifyReply,
    access: A,
    invoiceIdOf: (granted: Extract<A, { kind: 'granted' }>) => string,
  ) => {
    if (access.kind !== 'granted') {
      sendError(request, reply, refusalPage(access.kind));
      return undefined;
    }
    const granted = access as Extract<A, { kind: 'granted' }>;
    const pageRequest = { base: pagesBaseUrlOf(request), locale: localeOf(request, granted.locale) };
    const printable = await portalPrintableInvoice(db, granted, invoiceIdOf(granted), pageRequest);
    if (!printable) {
      sendError(request, reply, 'not-found');
      return undefined;
    }
    return { access: granted, printable, pageRequest };
  };
  const portalInvoice = async (request: FastifyRequest<{ Params: InvoiceParams }>, reply: FastifyReply) =>
    openInvoice(request, reply, await openPortalSession(db, request.params.token), () =>
      canonicalUuid(request.params.invoice_id),
    );
  const hostedInvoice = async (request: FastifyRequest<{ Params: TokenParams }>, reply: FastifyReply) =>
    openInvoice(
      request,
      reply,
      await openHostedInvoice(db, request.params.token),
      (granted) => granted.invoiceId,
    );

  app.get<{ Params: InvoiceParams }>('/:token/invoices/:invoice_id', route, async (request, reply) => {
    const found = await portalInvoice(request, reply);
    if (!found) return reply;
    const { access, printable, pageRequest } = found;
    const page = invoicePage(printable, pageRequest, {
      from: 'portal',
      token: request.params.token,
      expiresAt: access.expiresAt,
    });
    return sendPage(reply, 200, page);
  });
  app.get<{ Params: InvoiceParams }>('/:token/invoices/:invoice_id/print', route, async (request, reply) => {
    const found = await portalInvoice(request, reply);
    return found ? sendDocument(reply, found.printable, 'html') : reply;
  });
  app.get<{ Params: InvoiceParams }>('/:token/invoices/:invoice_id/pdf', route, async (request, reply) => {
    const found = await portalInvoice(request, reply);
    return found ? sendDocument(reply, found.printable, 'pdf') : reply;
  });

  // --- a hosted invoice link: that one invoice ---
  app.get<{ Params: TokenParams }>('/invoice/:token', route, async (request, reply) => {
    const found = await hostedInvoice(request, reply);
    if (!found) return reply;
    const page = invoicePage(found.printable, found.pageRequest, {
      from: 'hosted',
      token: request.params.token,
      validUntil: found.access.validUntil,
    });
    return sendPage(reply, 200, page);
  });
  app.get<{ Params: TokenParams }>('/invoice/:token/print', route, async (request, reply) => {
    const found = await hostedInvoice(request, reply);
    return found ? sendDocument(reply, found.printable, 'html') : reply;
  });
  app.get<{ Params: TokenParams }>('/invoice/:token/pdf', route, async (request, reply) => {
    const found = await hostedInvoice(request, reply);
    return found ? sendDocument(reply, found.printable, 'pdf') : reply;
  });

  // --- a credit note of the session's customer: its printable HTML and PDF ---
  const portalCreditNote = async (
    request: FastifyRequest<{ Params: CreditNoteParams }>,
    reply: FastifyReply,
  ) => {
    const access = await openPortalSession(db, request.params.token);
    if (access.kind !== 'granted') {
      sendError(request, reply, refusalPage(access.kind));
      return undefined;
    }
    const printable = await portalPrintableCreditNote(
      db,
      access,
      canonicalUuid(request.params.credit_note_id),
      {
        base: pagesBaseUrlOf(request),
        locale: localeOf(request, access.locale),
      },
    );
    if (!printable) sendError(request, reply, 'not-found');
    return printable;
  };
  app.get<{ Params: CreditNoteParams }>(
    '/:token/credit-notes/:credit_note_id/print',
    route,
    async (request, reply) => {
      const printable = await portalCreditNote(request, reply);
      if (!printable) return reply;
      return reply
        .header('Content-Security-Policy', PRINTABLE_CSP)
        .type('text/html; charset=utf-8')
        .send(renderCreditNoteHtml(printable));
    },
  );
  app.get<{ Params: CreditNoteParams }>(
    '/:token/credit-notes/:credit_note_id/pdf',
    route,
    async (request, reply) => {
      const printable = await portalCreditNote(request, reply);
      if (!printable) return reply;
      const pdf = await renderCreditNotePdf(printable);
      return reply
        .header(
          'Content-Disposition',
          `attachment; filename="${creditNotePdfFilename(printable.note.number)}"`,
        )
        .type('application/pdf')
        .send(pdf);
    },
  );
};
