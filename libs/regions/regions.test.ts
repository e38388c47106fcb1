import { describe, expect, it } from 'vitest';
import { knownRegion, regionCode, regionProblem, TAX_REGIONS } from './regions.js';

describe('regionCode', () => {
  it('reads codes, names and common abbreviations alike', () => {
    const canadian = {
      QC: ['QC', 'qc', 'Québec', 'quebec', 'Que.', 'Qué', 'PQ'],
      PE: ['PE', 'PEI', 'P.E.I.', 'Prince Edward Island', 'Île-du-Prince-Édouard'],
      NS: ['NS', 'N.S.', 'Nova Scotia', 'Nouvelle-Écosse'],
      NL: ['Nfld.', 'Newfoundland and Labrador'],
      AB: ['Alta.', 'Alberta'],
      SK: ['Sask.'],
      ON: ['Ont.', ' ontario '],
    };
    for (const [code, spellings] of Object.entries(canadian)) {
      for (const spelling of spellings) expect(regionCode('CA', spelling), spelling).toBe(code);
    }
    for (const [spelling, code] of [
      ['Calif.', 'CA'],
      ['New York', 'NY'],
      ['Mass.', 'MA'],
      ['D.C.', 'DC'],
    ]) {
      expect(regionCode('US', spelling!), spelling).toBe(code);
    }
  });

  it('reads the name of every province, territory and state as its code, in French too for Canada', () => {
    const canadian: Record<string, string[]> = {
      AB: ['Alberta'],
      BC: ['British Columbia', 'Colombie-Britannique'],
      MB: ['Manitoba'],
      NB: ['New Brunswick', 'Nouveau-Brunswick'],
      NL: ['Newfoundland', 'Terre-Neuve-et-Labrador'],
      NS: ['Nova Scotia', 'Nouvelle-Écosse'],
      NT: ['Northwest Territories', 'Territoires du Nord-Ouest'],
      NU: ['Nunavut'],
      ON: ['Ontario'],
      PE: ['Prince Edward Island', 'Île-du-Prince-Édouard'],
      QC: ['Quebec'],
      SK: ['Saskatchewan'],
      YT: ['Yukon'],
    };
    for (const [code, names] of Object.entries(canadian)) {
      for (const name of names) expect(knownRegion('CA', name), name).toBe(code);
    }
    const states = [
      ['AL', 'Alabama'],
      ['AK', 'Alaska'],
      ['AZ', 'Arizona'],
      ['AR', 'Arkansas'],
      ['CA', 'California'],
      ['CO', 'Colorado'],
      ['CT', 'Connecticut'],
      ['DE', 'Delaware'],
      ['DC', 'District of Columbia'],
      ['FL', 'Florida'],
      ['GA', 'Georgia'],
      ['HI', 'Hawaii'],
      ['ID', 'Idaho'],
      ['IL', 'Illinois'],
      ['IN', 'Indiana'],
      ['IA', 'Iowa'],
      ['KS', 'Kansas'],
      ['KY', 'Kentucky'],
      ['LA', 'Louisiana'],
      ['ME', 'Maine'],
      ['MD', 'Maryland'],
      ['MA', 'Massachusetts'],
      ['MI', 'Michigan'],
      ['MN', 'Minnesota'],
      ['MS', 'Mississippi'],
      ['MO', 'Missouri'],
      ['MT', 'Montana'],
      ['NE', 'Nebraska'],
      ['NV', 'Nevada'],
      ['NH', 'New Hampshire'],
      ['NJ', 'New Jersey'],
      ['NM', 'New Mexico'],
      ['NY', 'New York'],
      ['NC', 'North Carolina'],
      ['ND', 'North Dakota'],
      ['OH', 'Ohio'],
      ['OK', 'Oklahoma'],
      ['OR', 'Oregon'],
      ['PA', 'Pennsylvania'],
      ['RI', 'Rhode Island'],
      ['SC', 'South Carolina'],
      ['SD', 'South Dakota'],
      ['TN', 'Tennessee'],
      ['TX', 'Texas'],
      ['UT', 'Utah'],
      ['VT', 'Vermont'],
      ['VA', 'Virginia'],
      ['WA', 'Washington'],
      ['WV', 'West Virginia'],
      ['WI', 'Wisconsin'],
      ['WY', 'Wyoming'],
    ] as const;
    for (const [code, name] of states) expect(knownRegion('US', name), name).toBe(code);
    expect(new Set(states.map(([code]) => code))).toEqual(new Set(TAX_REGIONS.US));
  });

  it("reads every state's AP style abbreviation, Montana's and West Virginia's too", () => {
    const ap = {
      AL: 'Ala.',
      AZ: 'Ariz.',
      AR: 'Ark.',
      CA: 'Calif.',
      CO: 'Colo.',
      CT: 'Conn.',
      DE: 'Del.',
      FL: 'Fla.',
      GA: 'Ga.',
      IL: 'Ill.',
      IN: 'Ind.',
      KS: 'Kan.',
      KY: 'Ky.',
      LA: 'La.',
      MD: 'Md.',
      MA: 'Mass.',
      MI: 'Mich.',
      MN: 'Minn.',
      MS: 'Miss.',
      MO: 'Mo.',
      MT: 'Mont.',
      NE: 'Neb.',
      NV: 'Nev.',
      NH: 'N.H.',
      NJ: 'N.J.',
      NM: 'N.M.',
      NY: 'N.Y.',
      NC: 'N.C.',
      ND: 'N.D.',
      OK: 'Okla.',
      OR: 'Ore.',
      PA: 'Pa.',
      RI: 'R.I.',
      SC: 'S.C.',
      SD: 'S.D.',
      TN: 'Tenn.',
      VT: 'Vt.',
      VA: 'Va.',
      WA: 'Wash.',
      WV: 'W.Va.',
      WI: 'Wis.',
      WY: 'Wyo.',
    };
    for (const [code, abbreviation] of Object.entries(ap)) {
      expect(knownRegion('US', abbreviation), abbreviation).toBe(code);
    }
  });

  it('reads names written with "&" or with dots and commas inside', () => {
    // "Newfoundland & Labrador" fell back to federal GST (5 %) instead of HST (15 %)
    expect(regionCode('CA', 'Newfoundland & Labrador')).toBe('NL');
    expect(regionCode('CA', 'Newfoundland&Labrador')).toBe('NL');
    expect(regionCode('US', 'Washington, D.C.')).toBe('DC');
    expect(regionCode('US', 'Washington D.C.')).toBe('DC');
    expect(regionCode('US', 'Washington')).toBe('WA');
  });

  it('leaves unknown text upper-cased, and abbreviations to their own country', () => {
    expect(regionCode('CA', 'Atlantis')).toBe('ATLANTIS');
    expect(regionCode('US', 'Que.')).toBe('QUE.');
    expect(regionCode('DE', 'Bayern')).toBe('BAYERN');
  });

  it('reads names and abbreviations only for Canada and the US, not for another country', () => {
    expect(regionCode('MX', 'Texas')).toBe('TEXAS');
    expect(regionCode('DE', 'Calif.')).toBe('CALIF.');
    expect(regionCode('GB', 'Ontario')).toBe('ONTARIO');
  });

  it('takes exactly two letters as a code: fewer come back as typed, upper-cased without surrounding spaces', () => {
    expect(regionCode('CA', ' n.s. ')).toBe('NS');
    expect(regionCode('CA', ' q. ')).toBe('Q.');
    expect(regionCode('CA', ' Atlantis ')).toBe('ATLANTIS');
  });
});

describe('regions the tax table knows', () => {
  it('knows a region of a country taxed by region by its code, name or abbreviation', () => {
    expect(knownRegion('CA', 'Québec')).toBe('QC');
    expect(knownRegion('ca', ' on ')).toBe('ON');
    // a country typed in lower case or with spaces reads names and abbreviations too
    expect(knownRegion(' ca ', 'Nova Scotia')).toBe('NS');
    expect(knownRegion('us', 'Calif.')).toBe('CA');
    expect(knownRegion('US', 'Washington, D.C.')).toBe('DC');
    for (const [country, text] of [
      ['CA', 'ZZ'],
      ['CA', 'NY'],
      ['US', 'ON'],
      ['US', 'Atlantis'],
      ['CA', ''],
      ['CA', null],
      ['FR', 'Bretagne'],
    ] as const) {
      expect(knownRegion(country, text), `${country} ${text}`).toBeUndefined();
    }
    expect(TAX_REGIONS.CA).toHaveLength(13);
    expect(new Set(TAX_REGIONS.US)).toHaveProperty('size', 51);
  });

  it('says what is wrong, naming the regions; a missing one only when required', () => {
    expect(regionProblem('CA', 'ZZ', { required: false })).toEqual({
      code: 'invalid_value',
      message:
        'Must be a Canadian province or territory (AB, BC, MB, NB, NL, NS, NT, NU, ON, PE, QC, SK, YT), or its name.',
    });
    expect(regionProblem('US', 'ZZ', { required: false })?.message).toBe(
      'Must be a US state or DC, by its two-letter code (NY, CA, TX...) or its name.',
    );
    expect(regionProblem('CA', null, { required: false })).toBeUndefined();
    expect(regionProblem('CA', '  ', { required: true })).toMatchObject({ code: 'required' });
    expect(regionProblem('US', 'Texas', { required: true })).toBeUndefined();
    // the country as typed: lower case or with spaces is still checked, and named upper-cased
    expect(regionProblem(' us ', 'ZZ', { required: false })).toMatchObject({ code: 'invalid_value' });
    expect(regionProblem('ca', null, { required: true })).toEqual({
      code: 'required',
      message:
        'Required in CA, where sales tax depends on it: a Canadian province or territory (AB, BC, MB, NB, NL, NS, NT, NU, ON, PE, QC, SK, YT), or its name.',
    });
    expect(regionProblem('ca', 'Québec', { required: true })).toBeUndefined();
    // elsewhere the region is only part of the address
    expect(regionProblem('FR', 'ZZ', { required: true })).toBeUndefined();
    expect(regionProblem('DE', null, { required: true })).toBeUndefined();
  });
});
