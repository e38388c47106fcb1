/**
 * Province and state names as customers type them ("Ontario", "Québec", "new york"), mapped to the
 * two-letter codes the tax rules use, so a name written out is taxed like its code instead of
 * falling back to federal GST or no tax. Keys are normalized by `regionKey`.
 */
const CANADIAN_NAMES: Record<string, string> = {
  ALBERTA: 'AB',
  BRITISH_COLUMBIA: 'BC',
  COLOMBIE_BRITANNIQUE: 'BC',
  MANITOBA: 'MB',
  NEW_BRUNSWICK: 'NB',
  NOUVEAU_BRUNSWICK: 'NB',
  NEWFOUNDLAND_AND_LABRADOR: 'NL',
  NEWFOUNDLAND: 'NL',
  TERRE_NEUVE_ET_LABRADOR: 'NL',
  NOVA_SCOTIA: 'NS',
  NOUVELLE_ECOSSE: 'NS',
  NORTHWEST_TERRITORIES: 'NT',
  TERRITOIRES_DU_NORD_OUEST: 'NT',
  NUNAVUT: 'NU',
  ONTARIO: 'ON',
  PRINCE_EDWARD_ISLAND: 'PE',
  ILE_DU_PRINCE_EDOUARD: 'PE',
  QUEBEC: 'QC',
  SASKATCHEWAN: 'SK',
  YUKON: 'YT',
};

const US_NAMES: Record<string, string> = {
  ALABAMA: 'AL',
  ALASKA: 'AK',
  ARIZONA: 'AZ',
  ARKANSAS: 'AR',
  CALIFORNIA: 'CA',
  COLORADO: 'CO',
  CONNECTICUT: 'CT',
  DELAWARE: 'DE',
  DISTRICT_OF_COLUMBIA: 'DC',
  WASHINGTON_DC: 'DC',
  FLORIDA: 'FL',
  GEORGIA: 'GA',
  HAWAII: 'HI',
  IDAHO: 'ID',
  ILLINOIS: 'IL',
  INDIANA: 'IN',
  IOWA: 'IA',
  KANSAS: 'KS',
  KENTUCKY: 'KY',
  LOUISIANA: 'LA',
  MAINE: 'ME',
  MARYLAND: 'MD',
  MASSACHUSETTS: 'MA',
  MICHIGAN: 'MI',
  MINNESOTA: 'MN',
  MISSISSIPPI: 'MS',
  MISSOURI: 'MO',
  MONTANA: 'MT',
  NEBRASKA: 'NE',
  NEVADA: 'NV',
  NEW_HAMPSHIRE: 'NH',
  NEW_JERSEY: 'NJ',
  NEW_MEXICO: 'NM',
  NEW_YORK: 'NY',
  NORTH_CAROLINA: 'NC',
  NORTH_DAKOTA: 'ND',
  OHIO: 'OH',
  OKLAHOMA: 'OK',
  OREGON: 'OR',
  PENNSYLVANIA: 'PA',
  RHODE_ISLAND: 'RI',
  SOUTH_CAROLINA: 'SC',
  SOUTH_DAKOTA: 'SD',
  TENNESSEE: 'TN',
  TEXAS: 'TX',
  UTAH: 'UT',
  VERMONT: 'VT',
  VIRGINIA: 'VA',
  WASHINGTON: 'WA',
  WEST_VIRGINIA: 'WV',
  WISCONSIN: 'WI',
  WYOMING: 'WY',
};

/**
 * Abbreviations in common use (Canada Post's traditional ones, the AP style for states), keyed
 * without separators: "P.E.I." and "PEI" alike. Unknown text still falls through upper-cased, so
 * a typo gets federal tax only, as before, but "PEI" or "Que." is no longer one.
 */
const CANADIAN_ABBREVIATIONS: Record<string, string> = {
  ALTA: 'AB',
  MAN: 'MB',
  NFLD: 'NL',
  LAB: 'NL',
  NWT: 'NT',
  ONT: 'ON',
  PEI: 'PE',
  IPE: 'PE',
  QUE: 'QC',
  PQ: 'QC',
  SASK: 'SK',
  YUK: 'YT',
};

const US_ABBREVIATIONS: Record<string, string> = {
  ALA: 'AL',
  ARIZ: 'AZ',
  ARK: 'AR',
  CALIF: 'CA',
  COLO: 'CO',
  CONN: 'CT',
  DEL: 'DE',
  FLA: 'FL',
  ILL: 'IL',
  IND: 'IN',
  KAN: 'KS',
  KANS: 'KS',
  MASS: 'MA',
  MICH: 'MI',
  MINN: 'MN',
  MISS: 'MS',
  MONT: 'MT',
  NEB: 'NE',
  NEV: 'NV',
  OKLA: 'OK',
  ORE: 'OR',
  PENN: 'PA',
  TENN: 'TN',
  TEX: 'TX',
  WASH: 'WA',
  WIS: 'WI',
  WVA: 'WV',
  WYO: 'WY',
  DC: 'DC',
};

/**
 * Names keyed without separators, like the abbreviations: a name with a dot or comma inside
 * ("Washington, D.C.") would otherwise split into other words than its key ("WASHINGTON_D_C" vs
 * "WASHINGTON_DC") and fall back to no tax at all.
 */
const compactKeys = (names: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(names).map(([name, code]) => [name.replace(/_/g, ''), code]));
const CANADIAN_NAMES_COMPACT = compactKeys(CANADIAN_NAMES);
const US_NAMES_COMPACT = compactKeys(US_NAMES);

/**
 * Upper case, accents dropped, "&" read as "and", runs of anything but letters as one "_":
 * "Île-du-Prince-Édouard" -> ILE_DU_PRINCE_EDOUARD, "Newfoundland & Labrador" ->
 * NEWFOUNDLAND_AND_LABRADOR.
 */
function regionKey(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .replace(/&/g, ' AND ')
    .replace(/[^A-Z]+/g, '_')
    .replace(/^_|_$/g, '');
}

/**
 * The two-letter code of a Canadian province or US state given as a code ("on", "QC", "N.S."), a
 * name ("Ontario", "Québec", "New York") or a common abbreviation ("PEI", "Que.", "Calif."); other
 * text comes back upper-cased, as before.
 */
export function regionCode(country: string, stateProvince: string): string {
  const key = regionKey(stateProvince);
  // "N.S." and "B.C." are codes too
  const compact = key.replace(/_/g, '');
  const names = country === 'CA' ? CANADIAN_NAMES_COMPACT : country === 'US' ? US_NAMES_COMPACT : undefined;
  const abbreviations =
    country === 'CA' ? CANADIAN_ABBREVIATIONS : country === 'US' ? US_ABBREVIATIONS : undefined;
  const known = names?.[compact] ?? abbreviations?.[compact];
  if (known) return known;
  return compact.length === 2 ? compact : stateProvince.trim().toUpperCase();
}

/**
 * The regions of each country whose sales tax depends on the region (libs/billing/tax has a rule
 * for each, and a test holds the two lists together): Canada's provinces and territories, the US
 * states and DC. A customer in one of these countries is taxed by its region, so its region must
 * be one of these; elsewhere `state_province` is only part of the address.
 */
export const TAX_REGIONS: Readonly<Record<string, readonly string[]>> = {
  CA: ['AB', 'BC', 'MB', 'NB', 'NL', 'NS', 'NT', 'NU', 'ON', 'PE', 'QC', 'SK', 'YT'],
  US: [
    ...['AK', 'AL', 'AR', 'AZ', 'CA', 'CO', 'CT', 'DC', 'DE', 'FL', 'GA', 'HI', 'IA', 'ID', 'IL', 'IN', 'KS'],
    ...['KY', 'LA', 'MA', 'MD', 'ME', 'MI', 'MN', 'MO', 'MS', 'MT', 'NC', 'ND', 'NE', 'NH', 'NJ', 'NM', 'NV'],
    ...['NY', 'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VA', 'VT', 'WA', 'WI', 'WV', 'WY'],
  ],
};

/**
 * The code of `stateProvince` (a code, a name or an abbreviation, as regionCode reads it) when it
 * is one of TAX_REGIONS of `country`; undefined otherwise, or when the country is not taxed by
 * region.
 */
export function knownRegion(country: string, stateProvince: string | null | undefined): string | undefined {
  const regions = TAX_REGIONS[country.trim().toUpperCase()];
  if (!regions || !stateProvince?.trim()) return undefined;
  const code = regionCode(country.trim().toUpperCase(), stateProvince);
  return regions.includes(code) ? code : undefined;
}

const WHAT_REGION: Readonly<Record<string, string>> = {
  CA: `a Canadian province or territory (${TAX_REGIONS.CA!.join(', ')}), or its name`,
  US: 'a US state or DC, by its two-letter code (NY, CA, TX...) or its name',
};

/**
 * What is wrong with a region for its country, in a sentence for `details[].message`; undefined
 * when nothing is. Only countries taxed by region are checked: there the region must be one the tax
 * table knows, and when `required`, given at all (a customer's invoices cannot be taxed without it).
 */
export function regionProblem(
  country: string,
  stateProvince: string | null | undefined,
  options: { required: boolean },
): { code: 'required' | 'invalid_value'; message: string } | undefined {
  const upper = country.trim().toUpperCase();
  const what = WHAT_REGION[upper];
  if (!what) return undefined;
  if (!stateProvince?.trim()) {
    return options.required
      ? { code: 'required', message: `Required in ${upper}, where sales tax depends on it: ${what}.` }
      : undefined;
  }
  if (knownRegion(upper, stateProvince)) return undefined;
  return { code: 'invalid_value', message: `Must be ${what}.` };
}
