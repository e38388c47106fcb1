import { describe, expect, it } from 'vitest';
import { pairedShare } from './support.js';

/** How bench:entitlements (the counter) and bench:alerts (the evaluator) judge a share of a baseline. */
describe('pairedShare', () => {
  it("judges each round by its own pair: one slow round moves the mean's ratio, not the median", () => {
    const share = pairedShare([
      { variant: 11_700, baseline: 11_600 },
      { variant: 8_100, baseline: 16_200 }, // the variant ran in a slow minute of the machine
      { variant: 11_680, baseline: 12_300 },
      { variant: 11_670, baseline: 11_400 },
    ]);
    expect(share.byRound.map((r) => Number(r.toFixed(4)))).toEqual([1.0086, 0.5, 0.9496, 1.0237]);
    expect(share.medianOfRounds).toBeCloseTo((1.0086207 + 0.9495935) / 2, 6);
    expect(share.ofMeans).toBeCloseTo(43_150 / 51_500, 6);
  });

  it('takes the middle round of an odd count, and a lone round as it is', () => {
    expect(
      pairedShare([
        { variant: 9, baseline: 10 },
        { variant: 3, baseline: 10 },
        { variant: 10, baseline: 10 },
      ]).medianOfRounds,
    ).toBe(0.9);
    const lone = pairedShare([{ variant: 94, baseline: 100 }]);
    expect(lone).toEqual({ medianOfRounds: 0.94, ofMeans: 0.94, byRound: [0.94] });
  });
});
