import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCustomerCredit,
  postDraft,
  rerateDirtyDrafts,
  runBilling,
  type UsageForTransaction,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { setOrganizationSettings } from '../../libs/organizations/index.js';
import { cancelSubscription, changeSubscription, getSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, productIn, recordUsage, subscribe } from './fixtures.js';

/*
 * A DRAFT period invoice re-rated over what is counted now (libs/billing/run/drafts.ts,
 * docs/decisions.md "Grace drafts"): it stays the invoice of the period it was made for, first
 * period's one-time items and the late-usage lines it carries included; `invoice post` re-rates
 * before it posts; a grace draft's credit is judged when it posts. Seats 10.00 a month, API calls
 * 1-100 at 1.00 (graduated), a one-time Setup of 90.00; the customer is in Ontario (HST 13 %).
 */

let database: TestDatabase;
let usage: UsageForTransaction;

beforeAll(async () => {
  database = await createTestDatabase('draft_rerate');
  usage = usageSource(new PostgresUsageAggregator(database.db));
});
afterAll(() => database.drop());

const JAN = new Date('2026-01-01T00:00:00Z');
const FEB = new Date('2026-02-01T00:00:00Z');
const MAR = new Date('2026-03-01T00:00:00Z');

async function setUp(options: { setup?: boolean; graceHours?: number } = {}) {
  const { orgId } = await createTestOrg(database.db);
  if (options.graceHours) {
    await setOrganizationSettings(database.db, orgId, { invoiceGraceHours: options.graceHours });
  }
  const { seats, apiCalls } = await basicCatalog(database.db, orgId);
  const items = [{ product_id: seats }, { product_id: apiCalls }];
  if (options.setup) {
    const setup = await productIn(database.db, orgId, {
      name: 'Setup',
      pricing_type: 'one_time',
      unit_price: '90.00',
      currency: 'CAD',
    });
    items.push({ product_id: setup });
  }
  const customerId = await customerIn(database.db, orgId);
  const subscription = await subscribe(
    database.db,
    orgId,
    { customer_id: customerId, items, start_date: JAN },
    JAN,
  );
  const metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
  return { orgId, customerId, subscription, metered };
}

async function stored(invoiceId: string) {
  const { rows } = await database.db.query<{
    status: string;
    subtotal: string;
    total: string;
    amount_paid: string;
  }>(
    `SELECT status, subtotal::text AS subtotal, total::text AS total, amount_paid::text AS amount_paid
       FROM invoices WHERE id = $1`,
    [invoiceId],
  );
  const { rows: lines } = await database.db.query<{ description: string; line_total_pre_tax: string }>(
    `SELECT description, line_total_pre_tax::text AS line_total_pre_tax
       FROM invoice_items WHERE invoice_id = $1 ORDER BY position`,
    [invoiceId],
  );
  return { ...rows[0]!, lines: lines.map((line) => [line.description, line.line_total_pre_tax]) };
}

async function draftAt(orgId: number, now: Date): Promise<string> {
  const run = await runBilling(database.db, { usage, orgId, now, post: false });
  expect(run.failures).toEqual([]);
  expect(run.invoice_ids).toHaveLength(1);
  return run.invoice_ids[0]!;
}

/** From `now` the calls item of setUp's subscription includes 100 units (it included none). */
async function includeHundredCallsFrom(
  orgId: number,
  subscription: Awaited<ReturnType<typeof setUp>>['subscription'],
  metered: number,
  now: string,
) {
  const seatItem = subscription.items.find((item) => item.id !== metered)!.id;
  await changeSubscription(database.db, {
    subscriptionId: subscription.id,
    orgId,
    change: { items: [{ id: seatItem }, { id: metered, included_units: '100' }] },
    now: new Date(now),
  });
}

describe('a DRAFT re-rated by a late event', () => {
  it("keeps the first period's one-time items", async () => {
    const { orgId, metered } = await setUp({ setup: true });
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    const draftId = await draftAt(orgId, FEB);
    const before = await stored(draftId);
    expect(before.subtotal).toBe('110.00000000'); // Setup 90 + seats 10 + 10 calls
    expect(before.lines.map(([description]) => description)).toContain('Setup');

    await recordUsage(database.db, orgId, metered, '5', '2026-01-20T00:00:00Z');
    expect(await rerateDirtyDrafts(database.db, { orgId })).toEqual([draftId]);
    const after = await stored(draftId);
    expect(after.subtotal).toBe('115.00000000');
    expect(after.lines).toEqual([
      ['Seats', '10.00000000'],
      ['API calls (usage: 15 calls)', '15.00000000'],
      ['Setup', '90.00000000'],
    ]);
  });

  it('keeps the late-usage lines of an earlier posted period it carries', async () => {
    const { orgId, metered } = await setUp();
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    const january = await runBilling(database.db, { usage, orgId, now: FEB });
    expect((await stored(january.invoice_ids[0]!)).subtotal).toBe('20.00000000');
    // late for January (posted): 4 calls at 1.00 on February's invoice, a DRAFT
    await recordUsage(database.db, orgId, metered, '4', '2026-01-20T00:00:00Z');
    const draftId = await draftAt(orgId, MAR);
    const before = await stored(draftId);
    expect(before.subtotal).toBe('14.00000000');

    await recordUsage(database.db, orgId, metered, '3', '2026-02-10T00:00:00Z');
    expect(await rerateDirtyDrafts(database.db, { orgId })).toEqual([draftId]);
    const after = await stored(draftId);
    expect(after.subtotal).toBe('17.00000000'); // seats 10 + 3 February calls + the 4 late ones
    expect(after.lines.filter(([description]) => description!.includes('late'))).toEqual(
      before.lines.filter(([description]) => description!.includes('late')),
    );
  });
});

describe('a DRAFT re-rated after a change of its item', () => {
  it('prices the period at the terms it was billed at, not the ones the change set since', async () => {
    const { orgId, subscription, metered } = await setUp();
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    const draftId = await draftAt(orgId, FEB);
    expect((await stored(draftId)).subtotal).toBe('20.00000000');
    // February: the calls item now includes 100 units; January's draft was billed with none
    await includeHundredCallsFrom(orgId, subscription, metered, '2026-02-10T00:00:00Z');
    await recordUsage(database.db, orgId, metered, '5', '2026-01-20T00:00:00Z');
    expect(await rerateDirtyDrafts(database.db, { orgId })).toEqual([draftId]);
    expect((await stored(draftId)).subtotal).toBe('25.00000000');
  });

  it('a draft made before billed terms were kept prices its metered item at its billed period', async () => {
    const { orgId, subscription, metered } = await setUp();
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    const draftId = await draftAt(orgId, FEB);
    await database.db.query('UPDATE invoices SET billed_terms = NULL WHERE id = $1', [draftId]);
    await includeHundredCallsFrom(orgId, subscription, metered, '2026-02-10T00:00:00Z');
    await recordUsage(database.db, orgId, metered, '5', '2026-01-20T00:00:00Z');
    expect(await rerateDirtyDrafts(database.db, { orgId })).toEqual([draftId]);
    // 15 calls at 1.00, none included as January was billed, and the seats
    expect((await stored(draftId)).subtotal).toBe('25.00000000');
  });
});

describe('periods whose drafts were withdrawn', () => {
  it('are billed again in period order, withdrawn in any order: the lines of a change go on their own period', async () => {
    const { orgId, subscription } = await setUp();
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    // January: a second seat from Jan 11 (its lines wait for January's invoice)
    await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: {
        items: [{ id: seatItem, quantity: 2 }, { id: subscription.items.find((i) => i.id !== seatItem)!.id }],
      },
      now: new Date('2026-01-11T00:00:00Z'),
    });
    const january = await draftAt(orgId, FEB);
    const february = await draftAt(orgId, MAR);
    const januaryLines = (await stored(january)).lines;
    expect(januaryLines.length).toBeGreaterThan((await stored(february)).lines.length);
    for (const id of [february, january]) {
      await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: id, orgId }));
    }
    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-03-02T00:00:00Z') });
    expect(rebill.invoice_ids).toHaveLength(2);
    const { rows } = await database.db.query<{ id: string; period_start: string; invoice_number: string }>(
      `SELECT id, period_start::text AS period_start, invoice_number FROM invoices
        WHERE id = ANY($1::uuid[]) ORDER BY invoice_number`,
      [rebill.invoice_ids],
    );
    expect(rows.map((row) => row.period_start)).toEqual(['2026-01-01', '2026-02-01']);
    expect((await stored(rows[0]!.id)).lines).toEqual(januaryLines);
  });
});

describe('a withdrawn draft of a subscription that ended since', () => {
  it('is billed again: the period was run, whatever the status now', async () => {
    const { orgId, subscription } = await setUp();
    await database.db.transaction((tx) =>
      cancelSubscription(tx, {
        subscriptionId: subscription.id,
        atPeriodEnd: true,
        now: new Date('2026-01-20T00:00:00Z'),
      }),
    );
    // the run drafts January, its last period, and ends the subscription
    const draftId = await draftAt(orgId, FEB);
    const drafted = await stored(draftId);
    expect((await getSubscription(database.db, orgId, subscription.id)).status).toBe('canceled');
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));

    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-02-02T00:00:00Z') });
    expect([rebill.failures, rebill.invoice_ids.length, rebill.canceled]).toEqual([[], 1, 0]);
    const again = await stored(rebill.invoice_ids[0]!);
    expect([again.status, again.subtotal, again.lines]).toEqual(['POSTED', drafted.subtotal, drafted.lines]);
    // billed once: the next run finds nothing more to bill
    const next = await runBilling(database.db, { usage, orgId, now: new Date('2026-03-02T00:00:00Z') });
    expect(next.invoice_ids).toEqual([]);
  });
});

describe('a draft of a period before a change', () => {
  /**
   * January's DRAFT after a second seat from Jan 11 (its lines on January's invoice), then a third
   * seat from Feb 10: the items' own terms moved twice since January began.
   */
  async function januaryDraftThenChanges() {
    const setup = await setUp();
    const { orgId, subscription, metered } = setup;
    const seatItem = subscription.items.find((item) => item.id !== metered)!.id;
    const seats = (quantity: number, now: string) =>
      changeSubscription(database.db, {
        subscriptionId: subscription.id,
        orgId,
        change: { items: [{ id: seatItem, quantity }, { id: metered }] },
        now: new Date(now),
      });
    await seats(2, '2026-01-11T00:00:00Z');
    const draftId = await draftAt(orgId, FEB);
    const drafted = await stored(draftId);
    await seats(3, '2026-02-10T00:00:00Z');
    return { ...setup, draftId, drafted };
  }

  it('withdrawn, is billed again at the terms the period had', async () => {
    const { orgId, draftId, drafted } = await januaryDraftThenChanges();
    // 1 seat for January and the second seat's lines; neither 3 seats nor 2 seats plus the lines
    expect(drafted.lines.find(([description]) => description === 'Seats')).toEqual(['Seats', '10.00000000']);
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));
    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-02-11T00:00:00Z') });
    expect(rebill.invoice_ids).toHaveLength(1);
    const again = await stored(rebill.invoice_ids[0]!);
    expect([again.lines, again.subtotal]).toEqual([drafted.lines, drafted.subtotal]);
  });

  it('withdrawn, bills an item added within the period by its lines alone, as the draft did', async () => {
    const { orgId, subscription } = await setUp();
    const support = await productIn(database.db, orgId, {
      name: 'Support',
      pricing_type: 'recurring',
      unit_price: '31.00',
      currency: 'CAD',
    });
    const kept = subscription.items.map((item) => ({ id: item.id }));
    const change = (items: unknown[], now: string) =>
      changeSubscription(database.db, {
        subscriptionId: subscription.id,
        orgId,
        change: { items },
        now: new Date(now),
      });
    // Support from Jan 11: January bills its charge for the 21 days left, not the whole month
    const added = await change([...kept, { product_id: support }], '2026-01-11T00:00:00Z');
    const supportItem = added.subscription.items.find((item) => item.product_id === support)!.id;
    const draftId = await draftAt(orgId, FEB);
    const drafted = await stored(draftId);
    expect(drafted.lines.filter(([description]) => description === 'Support')).toEqual([]);
    // February's change records February's terms on the item: January's are no longer on it
    await change([...kept, { id: supportItem, quantity: 2 }], '2026-02-10T00:00:00Z');
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));
    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-02-11T00:00:00Z') });
    expect((await stored(rebill.invoice_ids[0]!)).lines).toEqual(drafted.lines);
  });

  it("withdrawn and billed again, prices the period's late usage at the terms the period had", async () => {
    const { orgId, subscription, metered } = await setUp();
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    const draftId = await draftAt(orgId, FEB);
    // from Feb 10 the calls item includes 100 units; January included none
    await includeHundredCallsFrom(orgId, subscription, metered, '2026-02-10T00:00:00Z');
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));
    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-02-11T00:00:00Z') });
    expect((await stored(rebill.invoice_ids[0]!)).subtotal).toBe('20.00000000'); // seat 10 + 10 calls
    // 5 calls of January arrive late: March's invoice bills them at January's terms, 1.00 each
    await recordUsage(database.db, orgId, metered, '5', '2026-01-20T00:00:00Z');
    const march = await runBilling(database.db, { usage, orgId, now: MAR });
    const late = (await stored(march.invoice_ids[0]!)).lines.filter(([description]) =>
      description!.includes('late'),
    );
    expect(late.map(([, amount]) => amount)).toEqual(['5.00000000']);
  });

  it('re-rated by a late event, keeps the terms the period had', async () => {
    const { orgId, metered, draftId, drafted } = await januaryDraftThenChanges();
    await recordUsage(database.db, orgId, metered, '5', '2026-01-20T00:00:00Z');
    expect(await rerateDirtyDrafts(database.db, { orgId })).toEqual([draftId]);
    const after = await stored(draftId);
    expect(after.lines).toEqual(
      drafted.lines.map(([description, amount]) =>
        description!.startsWith('API calls')
          ? ['API calls (usage: 5 calls)', '5.00000000']
          : [description, amount],
      ),
    );
  });
});

describe('withdrawing', () => {
  it('a DRAFT carrying late usage gives it back: the period billed again carries it once more', async () => {
    const { orgId, metered } = await setUp();
    await recordUsage(database.db, orgId, metered, '10', '2026-01-10T00:00:00Z');
    await runBilling(database.db, { usage, orgId, now: FEB });
    await recordUsage(database.db, orgId, metered, '4', '2026-01-20T00:00:00Z');
    const draftId = await draftAt(orgId, MAR);
    const late = (await stored(draftId)).lines.filter(([description]) => description!.includes('late'));
    expect(late).toHaveLength(1);
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draftId, orgId }));
    const rebill = await runBilling(database.db, { usage, orgId, now: new Date('2026-03-02T00:00:00Z') });
    expect(rebill.invoice_ids).toHaveLength(1);
    const again = await stored(rebill.invoice_ids[0]!);
    expect(again.subtotal).toBe('14.00000000');
    expect(again.lines.filter(([description]) => description!.includes('late'))).toEqual(late);
  });

  it('a POSTED invoice bills nothing again: its change lines and its period stay billed', async () => {
    const { orgId, subscription } = await setUp();
    const seatItem = subscription.items.find((item) => item.usage_type === 'licensed')!.id;
    const calls = subscription.items.find((item) => item.id !== seatItem)!.id;
    await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: seatItem, quantity: 2 }, { id: calls }] },
      now: new Date('2026-01-11T00:00:00Z'),
    });
    const january = await runBilling(database.db, { usage, orgId, now: FEB });
    const posted = january.invoice_ids[0]!;
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: posted, orgId }));
    const february = await runBilling(database.db, { usage, orgId, now: MAR });
    // February alone: two seats, none of January's lines again
    expect(february.invoice_ids).toHaveLength(1);
    expect((await stored(february.invoice_ids[0]!)).lines).toEqual([
      ['Seats', '20.00000000'],
      ['API calls (usage: 0 calls)', '0.00000000'],
    ]);
  });
});

describe('posting a DRAFT', () => {
  it('`invoice post` re-rates it over what is counted at that moment', async () => {
    const { orgId, metered } = await setUp();
    const draftId = await draftAt(orgId, FEB);
    expect((await stored(draftId)).subtotal).toBe('10.00000000');
    await recordUsage(database.db, orgId, metered, '7', '2026-01-05T00:00:00Z');
    const posted = await database.db.transaction((tx) => postDraft(tx, { invoiceId: draftId, orgId }));
    expect(posted.status).toBe('POSTED');
    expect(await stored(draftId)).toMatchObject({ status: 'POSTED', subtotal: '17.00000000' });
  });

  it('a grace draft posted by a run billing as of an earlier instant uses the credit effective when it posts', async () => {
    const { orgId, customerId } = await setUp({ graceHours: 24 });
    const run = await runBilling(database.db, { usage, orgId, now: FEB });
    const draftId = run.invoice_ids[0]!;
    expect((await stored(draftId)).status).toBe('DRAFT');
    // a grant made now (effective from now): a run billing as of February still posts with it
    await addCustomerCredit(database.db, { customerId, orgId, amount: '500.00' });
    const posting = await runBilling(database.db, {
      usage,
      orgId,
      now: new Date(FEB.getTime() + 24 * 3_600_000),
    });
    expect(posting.grace_posted).toEqual([draftId]);
    const after = await stored(draftId);
    expect(after).toMatchObject({ status: 'PAID', total: '11.30000000', amount_paid: '11.30000000' });
  });
});

describe('choosing the drafts a pass touches', () => {
  it('re-rates only the dirty drafts of the organization, subscriptions and items asked', async () => {
    const asked = await setUp();
    const other = await setUp();
    const drafts: string[] = [];
    for (const { orgId, metered } of [asked, other]) {
      const draftId = await draftAt(orgId, FEB);
      // the first comparison finds nothing changed and clears the marks the run left
      await rerateDirtyDrafts(database.db, { orgId });
      await recordUsage(database.db, orgId, metered, '6', '2026-01-15T00:00:00Z');
      drafts.push(draftId);
    }
    const seatItem = asked.subscription.items.find((item) => item.id !== asked.metered)!.id;
    // none of the asked subscription's, none of another item's, none of another organization's
    expect(
      await rerateDirtyDrafts(database.db, { orgId: asked.orgId, subscriptionIds: [other.subscription.id] }),
    ).toEqual([]);
    expect(
      await rerateDirtyDrafts(database.db, { orgId: asked.orgId, subscriptionItemIds: [seatItem] }),
    ).toEqual([]);
    expect(await rerateDirtyDrafts(database.db, { orgId: other.orgId })).toEqual([drafts[1]]);
    expect((await stored(drafts[0]!)).subtotal).toBe('10.00000000');
    expect(
      await rerateDirtyDrafts(database.db, {
        orgId: asked.orgId,
        subscriptionIds: [asked.subscription.id],
        subscriptionItemIds: [asked.metered],
      }),
    ).toEqual([drafts[0]]);
    expect((await stored(drafts[0]!)).subtotal).toBe('16.00000000');
  });

  it('takes the dirty drafts in (organization, id) order, whatever order their late events came in', async () => {
    const first = await setUp();
    const second = await setUp();
    expect(first.orgId).toBeLessThan(second.orgId);
    const drafts = {
      [first.orgId]: [await draftAt(first.orgId, FEB)],
      [second.orgId]: [await draftAt(second.orgId, FEB)],
    };
    const subscriptionIds = [first.subscription.id, second.subscription.id];
    const meteredItems = [
      { orgId: first.orgId, item: first.metered },
      { orgId: second.orgId, item: second.metered },
    ];
    // Invoice ids are random: more drafts in both organizations until one of the second's sorts
    // before one of the first's by id alone (after n each, chance n!n!/(2n)! that none does).
    const sortsApart = () =>
      drafts[second.orgId]!.some((id) => drafts[first.orgId]!.some((other) => id < other));
    for (let round = 0; !sortsApart() && round < 12; round++) {
      for (const { orgId, subscription, metered } of [first, second]) {
        const calls = subscription.items.find((item) => item.id === metered)!.product_id;
        const more = await subscribe(
          database.db,
          orgId,
          {
            customer_id: await customerIn(database.db, orgId),
            items: [{ product_id: calls }],
            start_date: JAN,
          },
          JAN,
        );
        const run = await runBilling(database.db, {
          usage,
          orgId,
          subscriptionIds: [more.id],
          now: FEB,
          post: false,
        });
        drafts[orgId]!.push(run.invoice_ids[0]!);
        subscriptionIds.push(more.id);
        meteredItems.push({ orgId, item: more.items[0]!.id });
      }
    }
    expect(sortsApart()).toBe(true);
    // the first comparison clears the marks the runs left
    await rerateDirtyDrafts(database.db, { subscriptionIds });
    for (const { orgId, item } of [...meteredItems].reverse()) {
      await recordUsage(database.db, orgId, item, '3', '2026-01-15T00:00:00Z');
    }
    expect(await rerateDirtyDrafts(database.db, { subscriptionIds })).toEqual([
      ...drafts[first.orgId]!.sort(),
      ...drafts[second.orgId]!.sort(),
    ]);
  });

  it('a run for some subscriptions posts only their grace drafts whose grace has passed', async () => {
    const { orgId, customerId, subscription, metered } = await setUp({ graceHours: 24 });
    const seats = subscription.items.find((item) => item.id !== metered)!.product_id;
    const second = await subscribe(
      database.db,
      orgId,
      { customer_id: customerId, items: [{ product_id: seats }], start_date: JAN },
      JAN,
    );
    const run = await runBilling(database.db, { usage, orgId, now: FEB });
    expect(run.invoice_ids).toHaveLength(2);
    const { rows } = await database.db.query<{ id: string; subscription_id: string }>(
      'SELECT id, subscription_id::text FROM invoices WHERE org_id = $1 ORDER BY subscription_id',
      [orgId],
    );
    const draftOf = (id: number) => rows.find((row) => row.subscription_id === String(id))!.id;
    const posting = await runBilling(database.db, {
      usage,
      orgId,
      subscriptionIds: [subscription.id],
      now: new Date(FEB.getTime() + 24 * 3_600_000),
    });
    expect(posting.grace_posted).toEqual([draftOf(subscription.id)]);
    expect((await stored(draftOf(subscription.id))).status).toBe('POSTED');
    expect((await stored(draftOf(second.id))).status).toBe('DRAFT');
  });
});
