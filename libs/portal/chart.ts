import { displayQuantity, displayShortDate, type Locale, messagesFor } from '../i18n/index.js';
import { escapeHtml } from '../invoice-documents/index.js';
import { addScaled, formatMoney, parseMoney } from '../money/index.js';

export interface DailyQuantity {
  /** A UTC day, YYYY-MM-DD. */
  date: string;
  /** A decimal string (8 fractional digits, as the usage read-back gives it). */
  quantity: string;
}

export interface UsageChartOptions {
  locale: Locale;
  /** What is counted, e.g. the product's name: the chart's title and text alternative name it. */
  itemName: string;
  /** Unique in the page: ties the SVG to its title and description. */
  id: string;
}

const WIDTH = 640;
const HEIGHT = 200;
const PLOT = { left: 56, right: 8, top: 10, bottom: 28 } as const;

/** The smallest 1, 2 or 5 times a power of ten at or above `value` (a round top for the axis). */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

const round2 = (value: number) => Math.round(value * 100) / 100;

/** A quantity as a number of points on the axis; quantities stay exact everywhere else. */
function magnitude(quantity: string): number {
  return Math.max(0, Number(quantity));
}

/**
 * A bar chart of daily usage as inline SVG (one bar per day, zero days included, with the value
 * axis at 0, half and the top, and the first, middle and last day under the bars), the period's
 * total, and the same figures as a table for screen readers and anyone who wants the numbers.
 * No script and no style attribute: the page's stylesheet colours it (CSP default-src 'self').
 */
export function renderUsageChart(series: readonly DailyQuantity[], options: UsageChartOptions): string {
  const { locale, itemName, id } = options;
  const m = messagesFor(locale);
  const total = formatMoney(addScaled(...series.map((day) => parseMoney(day.quantity))));
  const peak = series.reduce(
    (max, day) => (parseMoney(day.quantity) > parseMoney(max) ? day.quantity : max),
    '0',
  );
  const top = niceCeiling(magnitude(peak));
  const plotWidth = WIDTH - PLOT.left - PLOT.right;
  const plotHeight = HEIGHT - PLOT.top - PLOT.bottom;
  const slot = series.length > 0 ? plotWidth / series.length : plotWidth;
  const barWidth = round2(Math.max(1, slot * 0.7));
  const baseline = PLOT.top + plotHeight;

  const bars = series
    .map((day, i) => {
      const height = round2((magnitude(day.quantity) / top) * plotHeight);
      const x = round2(PLOT.left + i * slot + (slot - barWidth) / 2);
      const label = `${displayShortDate(day.date, locale)}: ${displayQuantity(day.quantity, locale)}`;
      return `<rect class="bar" x="${x}" y="${round2(baseline - height)}" width="${barWidth}" height="${height}"><title>${escapeHtml(label)}</title></rect>`;
    })
    .join('');
  const gridlines = [0, 0.5, 1]
    .map((fraction) => {
      const y = round2(baseline - fraction * plotHeight);
      const value = displayQuantity(String(top * fraction), locale);
      return `<line class="grid" x1="${PLOT.left}" x2="${WIDTH - PLOT.right}" y1="${y}" y2="${y}"/><text class="axis" x="${PLOT.left - 6}" y="${y + 4}" text-anchor="end">${escapeHtml(value)}</text>`;
    })
    .join('');
  const labelled = [...new Set([0, Math.floor((series.length - 1) / 2), series.length - 1])].filter(
    (i) => i >= 0 && i < series.length,
  );
  const dayLabels = labelled
    .map((i) => {
      // the first and last labels start and end at their bar, so they stay inside the chart
      const anchor = i === 0 ? 'start' : i === series.length - 1 ? 'end' : 'middle';
      const x = round2(
        anchor === 'start'
          ? PLOT.left + i * slot + (slot - barWidth) / 2
          : anchor === 'end'
            ? PLOT.left + i * slot + (slot + barWidth) / 2
            : PLOT.left + i * slot + slot / 2,
      );
      return `<text class="axis" x="${x}" y="${HEIGHT - 8}" text-anchor="${anchor}">${escapeHtml(displayShortDate(series[i]!.date, locale))}</text>`;
    })
    .join('');
  const summary = m.chartSummary(
    itemName,
    series.length,
    displayQuantity(total, locale),
    displayQuantity(peak, locale),
  );
  const rows = series
    .map(
      (day) =>
        `<tr><td>${escapeHtml(displayShortDate(day.date, locale))}</td><td class="num">${escapeHtml(displayQuantity(day.quantity, locale))}</td></tr>`,
    )
    .join('');
  return `<figure class="chart">
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" focusable="false">
<title id="${id}-title">${escapeHtml(m.chartTitle(itemName))}</title>
<desc id="${id}-desc">${escapeHtml(summary)}</desc>
${gridlines}${bars}${dayLabels}
</svg>
<figcaption>${escapeHtml(m.usageOfPeriod(displayQuantity(total, locale)))}</figcaption>
<details><summary>${escapeHtml(m.chartTitle(itemName))}</summary>
<table><thead><tr><th scope="col">${escapeHtml(m.day)}</th><th scope="col" class="num">${escapeHtml(m.quantity)}</th></tr></thead><tbody>${rows}</tbody></table>
</details>
</figure>`;
}
