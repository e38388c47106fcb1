import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  getDailyUsage,
  getSubscriptionUsage,
  previewUpcomingInvoice,
  rerateDirtyDrafts,
  voidUsageWithCreditNote,
} from '../../../libs/billing/index.js';
import { ApiError } from '../../../libs/errors/index.js';
import {
  DailyUsagePoint,
  inputDate,
  integerIdQuery,
  integerPathId,
  listOf,
  paginationOf,
  paginationQuery,
  SubscriptionUsage,
  single,
  UpcomingInvoice,
  UsageEventWithStatus,
  uuidPathId,
  VoidedUsageEvent,
  VoidUsageEventRequest,
} from '../../../libs/schemas/index.js';
import { getUsageEvent, listUsageEvents, voidUsageEvent } from '../../../libs/usage/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

/**
 * Usage read-back and correction (docs/architecture.md, "The usage read-back"), served by the api: the proxy sends only the two
 * POST ingest routes to the ingest service. Thin: libs/billing (usage, daily, upcoming invoice)
 * and libs/usage (events, void) do the work.
 */

const SubscriptionPath = z.object({ subscription_id: integerPathId });
const EventPath = z.object({ event_id: uuidPathId });

const UsageQuery = z.object({
  period: z
    .enum(['current', 'previous'])
    .default('current')
    .meta({ description: 'The running period (default) or the one before it.' }),
});

const DailyQuery = z.object({
  from: inputDate
    .optional()
    .meta({ description: "First UTC day (YYYY-MM-DD); default: the current period's." }),
  to: inputDate.optional().meta({
    description:
      "Last UTC day, inclusive; at most 93 days from `from`. Default: the current period's last day.",
  }),
  subscription_item_id: integerIdQuery.optional().meta({ description: 'Only this metered item.' }),
});

const instantQuery = z.iso.datetime({
  offset: true,
  error: 'Must be an ISO 8601 date-time with a time zone (Z or ±hh:mm).',
});

const EventListQuery = paginationQuery.extend({
  subscription_item_id: integerIdQuery.optional().meta({ description: "Only this item's events." }),
  from: instantQuery.optional().meta({ description: 'Events whose timestamp is at or after this instant.' }),
  to: instantQuery.optional().meta({ description: 'Events whose timestamp is before this instant.' }),
  status: z.enum(['ACTIVE', 'VOIDED']).optional().meta({ description: 'Only events in this status.' }),
});

export const usageReadBackRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const stores = app.deps.usageRead;

  app.get(
    '/subscriptions/:subscription_id/usage',
    {
      schema: {
        operationId: 'getSubscriptionUsage',
        tags: ['Usage'],
        summary: "A subscription's usage of a period, priced as the billing run prices it",
        description:
          'Per metered item: the quantity of every non-voided event of the period, the included units, the ' +
          'billable quantity and the amount the billing run would charge now (before tax). A subscription ' +
          'without metered items has no items. `as_of`: every event answered 201 before it is counted.',
        params: SubscriptionPath,
        querystring: UsageQuery,
        response: {
          200: single(SubscriptionUsage),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422, 503),
        },
      },
    },
    async (request) => ({
      data: await getSubscriptionUsage(db, stores, orgIdOf(request), request.params.subscription_id, {
        period: request.query.period,
      }),
    }),
  );

  app.get(
    '/subscriptions/:subscription_id/usage/daily',
    {
      schema: {
        operationId: 'getSubscriptionDailyUsage',
        tags: ['Usage'],
        summary: 'Daily usage per metered item (UTC days, zero days included)',
        description: 'At most 93 days; `from` after `to` or a longer range is a 422 naming `to`.',
        params: SubscriptionPath,
        querystring: DailyQuery,
        response: {
          200: z.object({ data: z.array(DailyUsagePoint) }),
          ...errorResponses(...AUTHENTICATED_ERRORS, 404, 422, 503),
        },
      },
    },
    async (request) => ({
      data: await getDailyUsage(db, stores, orgIdOf(request), request.params.subscription_id, {
        from: request.query.from,
        to: request.query.to,
        subscriptionItemId: request.query.subscription_item_id,
      }),
    }),
  );

  app.get(
    '/subscriptions/:subscription_id/upcoming-invoice',
    {
      schema: {
        operationId: 'previewUpcomingInvoice',
        tags: ['Usage'],
        summary: 'The invoice the next billing run would create for the running period',
        description:
          "Lines, tax and total with the usage counted so far, composed by the billing run's own code: once the " +
          'period has ended and no event changes, the run creates this invoice to the last digit. 404 when no ' +
          'invoice is coming (canceled, expired).',
        params: SubscriptionPath,
        response: { 200: single(UpcomingInvoice), ...errorResponses(...AUTHENTICATED_ERRORS, 404, 503) },
      },
    },
    async (request) => ({
      data: await previewUpcomingInvoice(db, stores, orgIdOf(request), request.params.subscription_id),
    }),
  );

  app.get(
    '/usage/events',
    {
      schema: {
        operationId: 'listUsageEvents',
        tags: ['Usage'],
        summary: 'List recorded usage events, newest first',
        description:
          'Newest timestamp first, then by id: a stable order for paging. Events accepted in the last moments may ' +
          'not be listed yet in the distributed mode (they are on their way to the store).',
        querystring: EventListQuery,
        response: { 200: listOf(UsageEventWithStatus), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request) => {
      const { subscription_item_id, from, to, status, ...page } = request.query;
      const fromDate = from === undefined ? undefined : new Date(from);
      const toDate = to === undefined ? undefined : new Date(to);
      if (fromDate && toDate && fromDate > toDate) {
        throw ApiError.validation([
          { field: 'to', message: 'Must not be before from.', code: 'out_of_range' },
        ]);
      }
      const { data, total } = await listUsageEvents(
        db,
        orgIdOf(request),
        { subscriptionItemId: subscription_item_id, from: fromDate, to: toDate, status },
        page,
      );
      return { data, pagination: paginationOf(page, total) };
    },
  );

  app.get(
    '/usage/events/:event_id',
    {
      schema: {
        operationId: 'getUsageEvent',
        tags: ['Usage'],
        summary: 'Retrieve a recorded usage event with its status',
        params: EventPath,
        response: { 200: single(UsageEventWithStatus), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await getUsageEvent(db, orgIdOf(request), request.params.event_id) }),
  );

  app.post(
    '/usage/events/:event_id/void',
    {
      schema: {
        operationId: 'voidUsageEvent',
        tags: ['Usage'],
        summary: 'Void a usage event: it then counts nowhere',
        description:
          'Idempotent: voiding a voided event answers 200 with the same event. The void travels the usage log ' +
          'after the event, so every store drops it; an event accepted moments ago is waited for. An event of a ' +
          'period already invoiced (posted) is a 409 naming the invoice, unless the body asks for `correction: "credit_note"`: ' +
          'then the event of a posted period is voided together with a `usage_correction` credit note for exactly ' +
          'what it added to its line (the line re-rated without it), and the answer carries `credit_note_id`. A ' +
          'correction of a period not invoiced yet is a 409 (void it without one). An event of a period on a DRAFT invoice re-rates it. The body may be omitted.',
        params: EventPath,
        body: VoidUsageEventRequest.optional(),
        response: {
          200: single(VoidedUsageEvent),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 404, 409, 413, 415, 422, 503),
        },
      },
    },
    async (request) => {
      const orgId = orgIdOf(request);
      if (request.body?.correction === 'credit_note') {
        return { data: await voidUsageWithCreditNote(db, stores, orgId, request.params.event_id) };
      }
      const event = await voidUsageEvent(db, stores, orgId, request.params.event_id);
      // a void of a period on a DRAFT re-rates it at once (docs/decisions.md "Grace drafts")
      await rerateDirtyDrafts(db, { orgId, subscriptionItemIds: [event.subscription_item_id] });
      return { data: event };
    },
  );
};
