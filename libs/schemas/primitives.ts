import { z } from 'zod';
import { BILLABLE_CURRENCIES, isBillableCurrency } from '../money/index.js';
import { canonicalUuid } from './identifiers.js';

/** Money: a decimal string with exactly 8 fractional digits, never a JSON number. */
export const money = z
  .string()
  .regex(/^-?\d+\.\d{8}$/)
  .meta({ description: 'Decimal string with 8 fractional digits.', examples: ['49.99000000'] });

/** A non-money decimal quantity kept at 8 fractional digits (usage units). */
export const decimal8 = z
  .string()
  .regex(/^-?\d+\.\d{8}$/)
  .meta({ description: 'Decimal string with 8 fractional digits.', examples: ['1000.00000000'] });

/** Invoice item quantity: a decimal string with 4 fractional digits. */
export const quantity4 = z
  .string()
  .regex(/^-?\d+\.\d{4}$/)
  .meta({ description: 'Decimal string with 4 fractional digits.', examples: ['2.0000'] });

export const dateTime = z.iso.datetime().meta({ description: 'ISO 8601 UTC date-time.' });
export const date = z.iso.date().meta({ description: 'Date, YYYY-MM-DD.' });
/**
 * The service's horizon: what a client schedules (a usage event's timestamp, a subscription's
 * start) happens before it, so that every date derived from it (period and term ends, trial
 * ends, the day after) is one every store and the JSON date format hold: ClickHouse's DateTime
 * ends in 2106, and ISO 8601 dates without a sign end with year 9999.
 */
export const HORIZON_MS = Date.UTC(2100, 0, 1);
export const HORIZON_MESSAGE = 'Must be before 2100-01-01T00:00:00Z.';

/** A date given by a client: also one Postgres can hold (it has no year 0000). */
export const inputDate = z.iso.date().refine((value) => !value.startsWith('0000'), {
  message: 'Must be a date from year 0001 on.',
  params: { code: 'out_of_range' },
});

// A lone UTF-16 surrogate has no UTF-8 form: Postgres would store U+FFFD instead of what was sent.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether Postgres stores `value` as sent: a text column refuses U+0000 and cannot hold a lone surrogate. */
export const storable = (value: string): boolean => !value.includes('\u0000') && !LONE_SURROGATE.test(value);
export const UNSTORABLE_MESSAGE = 'Must not contain NUL characters or unpaired surrogates.';
/** Text from a client that Postgres can store. */
export const storableText = z.string().refine(storable, UNSTORABLE_MESSAGE);
export const uuid = z.uuid();
export const integerId = z.number().int().positive();

/** Path parameter that must be a positive integer; anything else is a 422 naming the parameter. */
export const integerIdParam = z.coerce.number().int().positive();
/**
 * A UUID a client names a record by where a malformed one is its mistake to fix (a query filter, a
 * console flag): 422 naming the field; either case, canonicalized (see canonicalUuid).
 */
export const uuidInput = z.uuid().overwrite(canonicalUuid);

/** ISO 3166-1 alpha-2: the 249 assigned codes, and XK (Kosovo), which payment networks use. */
const COUNTRY_CODES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS ' +
    'BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE ' +
    'EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM ' +
    'HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC ' +
    'LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA ' +
    'NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
    'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO ' +
    'TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW'
  ).split(' '),
);

export const countryCode = z
  .string()
  .regex(/^[A-Za-z]{2}$/, { message: 'Must be a two-letter country code.', abort: true })
  .transform((value) => value.toUpperCase())
  .refine((code) => COUNTRY_CODES.has(code), 'Must be an ISO 3166-1 alpha-2 country code.');

export const CURRENCIES = ['CAD', 'USD'] as const;

/**
 * A currency a price or an organization is in: one the billing code can round (libs/money's
 * minor-unit table), so no stored row can make billing fail later. Upper case, as ISO 4217 writes it.
 */
export const currencyCode = z
  .string()
  .regex(/^[A-Z]{3}$/, { message: 'Must be a three-letter currency code such as CAD.', abort: true })
  .refine(isBillableCurrency, {
    message: `Must be a currency with a known minor unit: ${BILLABLE_CURRENCIES.join(', ')}.`,
  });
