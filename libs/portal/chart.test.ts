import { describe, expect, it } from 'vitest';
import { type DailyQuantity, niceCeiling, renderUsageChart } from './chart.js';

function month(quantities: (string | number)[]): DailyQuantity[] {
  return quantities.map((quantity, i) => ({
    date: `2026-01-${String(i + 1).padStart(2, '0')}`,
    quantity: Number(quantity).toFixed(8),
  }));
}

const bars = (svg: string) => [
  ...svg.matchAll(/<rect class="bar" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)">/g),
];

describe('usage chart', () => {
  it('draws one bar per day, zero days included, heights in proportion to a round axis top', () => {
    const series = month(Array.from({ length: 31 }, (_, i) => (i % 7 === 0 ? 0 : i * 10)));
    const svg = renderUsageChart(series, { locale: 'en', itemName: 'API calls', id: 'c1' });
    const drawn = bars(svg);
    expect(drawn).toHaveLength(31);
    // the largest day is 300 (day 31): the axis top is 500, the plot 162 units high
    const heights = drawn.map((bar) => Number(bar[4]));
    expect(heights[0]).toBe(0);
    expect(heights[30]).toBeCloseTo((300 / 500) * 162, 1);
    expect(heights[15]).toBeCloseTo((150 / 500) * 162, 1);
    // bars move right day by day and never overlap
    const xs = drawn.map((bar) => Number(bar[1]));
    for (let i = 1; i < xs.length; i++) expect(xs[i]!).toBeGreaterThan(xs[i - 1]! + Number(drawn[i - 1]![3]));
    expect(svg).toContain('<text class="axis" x="50" y="14" text-anchor="end">500</text>');
    expect(svg).toContain('>Jan 1<');
    expect(svg).toContain('>Jan 31<');
  });

  it('says the total and the peak as text, and gives the figures as a table', () => {
    const series = month(['1.5', '0', '1234.25']);
    const svg = renderUsageChart(series, { locale: 'en', itemName: 'Storage <GB>', id: 'c2' });
    expect(svg).toContain('role="img" aria-labelledby="c2-title c2-desc"');
    expect(svg).toContain('<title id="c2-title">Daily usage of Storage &lt;GB&gt;</title>');
    expect(svg).toContain('over 3 days: 1,235.75 in all, at most 1,234.25 in one day.');
    expect(svg).toContain('<figcaption>Total for the period: 1,235.75</figcaption>');
    expect(svg).toContain('<tr><td>Jan 3</td><td class="num">1,234.25</td></tr>');
    expect(svg).not.toMatch(/\sstyle=|<script/);
  });

  it('writes Canadian French', () => {
    const svg = renderUsageChart(month(['1234.5']), { locale: 'fr-CA', itemName: 'Appels', id: 'c3' });
    expect(svg).toContain('Consommation quotidienne de Appels');
    expect(svg).toContain('1\u00a0234,5');
    expect(svg).toContain('>1 janv.<');
  });

  it('draws an empty month flat, and no bars for no days', () => {
    expect(
      bars(renderUsageChart(month(Array(30).fill(0)), { locale: 'en', itemName: 'x', id: 'c4' })).map(
        (b) => b[4],
      ),
    ).toEqual(Array(30).fill('0'));
    expect(bars(renderUsageChart([], { locale: 'en', itemName: 'x', id: 'c5' }))).toHaveLength(0);
  });

  it('labels the first, middle and last day, the first and last aligned inside the chart', () => {
    const svg = renderUsageChart(month(Array(30).fill(1)), { locale: 'en', itemName: 'x', id: 'c6' });
    const labels = [
      ...svg.matchAll(/<text class="axis" x="([\d.]+)" y="192" text-anchor="(\w+)">([^<]+)<\/text>/g),
    ];
    expect(labels.map((label) => [label[2], label[3]])).toEqual([
      ['start', 'Jan 1'],
      ['middle', 'Jan 15'],
      ['end', 'Jan 30'],
    ]);
    const drawn = bars(svg);
    // the first label starts where the first bar starts, the last ends where the last bar ends
    expect(Number(labels[0]![1])).toBeCloseTo(Number(drawn[0]![1]), 1);
    expect(Number(labels[2]![1])).toBeCloseTo(Number(drawn[29]![1]) + Number(drawn[29]![3]), 1);
    // bars take part of their day's slot, leaving a gap between days
    expect(Number(drawn[1]![1]) - Number(drawn[0]![1]) - Number(drawn[0]![3])).toBeGreaterThan(1);
  });

  it('draws a negative day as no bar, never below the axis', () => {
    const drawn = bars(renderUsageChart(month(['-5', '10']), { locale: 'en', itemName: 'x', id: 'c7' }));
    expect(drawn.map((bar) => Number(bar[4]))).toEqual([0, 162]);
    expect(Number(drawn[0]![2])).toBe(172);
  });

  it('marks the axis at 0, half and the top', () => {
    const svg = renderUsageChart(month(['40', '80']), { locale: 'en', itemName: 'x', id: 'c8' });
    const axis = [...svg.matchAll(/text-anchor="end">([^<]+)<\/text>/g)].map((match) => match[1]);
    expect(axis.slice(0, 3)).toEqual(['0', '50', '100']);
  });

  it('rounds the axis up to 1, 2 or 5 times a power of ten', () => {
    expect([0, 0.3, 1, 1.01, 2, 3, 7, 10, 11, 300, 1234].map(niceCeiling)).toEqual([
      1, 0.5, 1, 2, 2, 5, 10, 10, 20, 500, 2000,
    ]);
  });
});

describe('usage chart geometry', () => {
  it('places and sizes each bar to the hundredth: 70% of its day, centred, height in proportion', () => {
    // 31 days share 576 units: a slot of 18.58, a bar of 13.01; 13 of an axis top of 100 is 21.06 high
    const svg = renderUsageChart(month([13, 60, ...Array(29).fill(0)]), {
      locale: 'en',
      itemName: 'x',
      id: 'g1',
    });
    const drawn = bars(svg);
    expect(drawn[0]!.slice(1)).toEqual(['58.79', '150.94', '13.01', '21.06']);
    expect(drawn[1]!.slice(1)).toEqual(['77.37', '74.8', '13.01', '97.2']);
    expect(drawn[30]!.slice(1)).toEqual(['616.2', '172', '13.01', '0']);
    expect(svg).toContain('<title>Jan 1: 13</title>');
    expect(svg).toContain('<title>Jan 2: 60</title>');
    // the middle day's label is centred under its slot: 56 + 15.5 x 18.58 = 344
    expect(svg).toContain('<text class="axis" x="344" y="192" text-anchor="middle">Jan 16</text>');
  });

  it("escapes the item's name in the chart's description and in the table's summary", () => {
    const svg = renderUsageChart(month(['1']), { locale: 'en', itemName: 'Storage <GB> & co', id: 'g4' });
    expect(svg).toContain('<desc id="g4-desc">Daily usage of Storage &lt;GB&gt; &amp; co over 1 days');
    expect(svg).toContain('<summary>Daily usage of Storage &lt;GB&gt; &amp; co</summary>');
  });

  it('takes the largest day as the peak, wherever it falls', () => {
    const svg = renderUsageChart(month(['300', '10']), { locale: 'en', itemName: 'x', id: 'g2' });
    expect(svg).toContain('over 2 days: 310 in all, at most 300 in one day.');
    expect(svg).toContain('text-anchor="end">500</text>');
  });

  it('draws a bar at least one unit wide however many days there are', () => {
    const start = Date.UTC(2024, 0, 1);
    const series = Array.from({ length: 800 }, (_, i) => ({
      date: new Date(start + i * 86_400_000).toISOString().slice(0, 10),
      quantity: '1.00000000',
    }));
    const drawn = bars(renderUsageChart(series, { locale: 'en', itemName: 'x', id: 'g3' }));
    expect(drawn).toHaveLength(800);
    expect(new Set(drawn.map((bar) => bar[3]))).toEqual(new Set(['1']));
  });
});
