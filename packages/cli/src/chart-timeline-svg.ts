/**
 * @module chart-timeline-svg
 * The chart of `simulate --chart FILE.svg`: admissions, rejections and abandoned calls over time
 * per client kind, as SVG.
 */

import { CliError } from './cli-error.js';
import type { ClientKind, ClientKindOutcome } from './simulation-summary.js';

const ECHARTS_MISSING =
  'install echarts to draw charts (npm install echarts), or leave out --chart';

/**
 * The part of the `echarts` module this file uses (kept structural, so that the package's types do
 * not depend on ECharts being installed).
 *
 * @example
 * ```ts
 * const echarts = (await loadEcharts()) as EchartsModule;
 * ```
 */
export interface EchartsModule {
  init(
    dom: null,
    theme: null,
    options: { renderer: 'svg'; ssr: true; width: number; height: number },
  ): {
    setOption(option: object): void;
    renderToSVGString(): string;
    dispose(): void;
  };
}

/**
 * Imports ECharts, or throws a `CliError` saying to install it when it is not installed. ECharts is
 * an optional peer dependency, imported only here and only when a chart is asked for.
 *
 * @example
 * ```ts
 * const echarts = await loadEcharts();
 * ```
 */
export async function loadEcharts(
  importModule: (specifier: string) => Promise<unknown> = (specifier) => import(specifier),
): Promise<EchartsModule> {
  let loaded: unknown;
  try {
    loaded = await importModule('echarts');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new CliError(ECHARTS_MISSING, { cause: error });
    }
    throw error;
  }
  const module = loaded as Partial<EchartsModule> & { default?: Partial<EchartsModule> };
  const echarts = typeof module.init === 'function' ? module : module.default;
  if (typeof echarts?.init !== 'function') throw new CliError(ECHARTS_MISSING);
  return echarts as EchartsModule;
}

/** A colour per client kind, the same in both panels. */
const KIND_COLORS: Readonly<Record<ClientKind, string>> = {
  ours: '#2e7d32',
  naive: '#c62828',
  fixed: '#ef6c00',
  'hint-ignoring': '#6a1b9a',
  'give-up-early': '#1565c0',
  planned: '#00838f',
};

/**
 * Dash pattern per series position (px): with the colour, every kind looks different even where
 * two lines coincide.
 */
const SERIES_DASHES: readonly (readonly number[])[] = [
  [],
  [9, 4],
  [2, 3],
  [12, 3, 2, 3],
  [5, 5],
  [1, 4],
];

/**
 * How the `index`-th of `count` kinds is drawn: its dash pattern and width (px). Widths fall with
 * the draw order, so a line drawn later over an earlier one leaves the earlier one's edges showing.
 *
 * @example
 * ```ts
 * seriesStyle(0, 3); // { dash: [], widthPx: 4.5 }
 * ```
 */
export function seriesStyle(
  index: number,
  count: number,
): { dash: readonly number[]; widthPx: number } {
  return {
    dash: SERIES_DASHES[index % SERIES_DASHES.length] ?? [],
    widthPx: 1.5 + 1.5 * (count - 1 - index),
  };
}

const NICE_BINS_MS = [100, 250, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 300_000];
const MAX_BINS = 150;

/**
 * Bin width for a span of `spanMs`: the smallest "nice" width giving at most 150 bins, ms.
 *
 * @example
 * ```ts
 * timelineBinMs(21_000); // 250
 * ```
 */
export function timelineBinMs(spanMs: number): number {
  for (const binMs of NICE_BINS_MS) if (spanMs / binMs <= MAX_BINS) return binMs;
  return Math.ceil(spanMs / MAX_BINS / 60_000) * 60_000;
}

/**
 * Admissions and rejections per second of one client kind, per bin.
 *
 * @example
 * ```ts
 * const t: KindTimeline = timelineOf(outcome, 1_000, 30);
 * t.admittedPerSecond[0]; // requests admitted in [0 s, 1 s)
 * ```
 */
export interface KindTimeline {
  readonly kind: ClientKind;
  readonly admittedPerSecond: number[];
  readonly rejectedPerSecond: number[];
  /** Calls given up per second (the client stopped without an admission). */
  readonly abandonedPerSecond: number[];
}

/**
 * Counts the agent's admissions and rejections of one outcome in `bins` bins of `binMs`.
 *
 * @example
 * ```ts
 * timelineOf(outcome, 1_000, 30).rejectedPerSecond.reduce((a, b) => a + b); // all rejections
 * ```
 */
export function timelineOf(outcome: ClientKindOutcome, binMs: number, bins: number): KindTimeline {
  const admitted = new Array<number>(bins).fill(0);
  const rejected = new Array<number>(bins).fill(0);
  for (const r of outcome.requests) {
    const bin = Math.min(bins - 1, Math.floor(r.atMs / binMs));
    if (r.admitted) admitted[bin] = (admitted[bin] ?? 0) + 1;
    else rejected[bin] = (rejected[bin] ?? 0) + 1;
  }
  const abandoned = new Array<number>(bins).fill(0);
  for (const atMs of outcome.abandonedAtMs) {
    const bin = Math.min(bins - 1, Math.floor(atMs / binMs));
    abandoned[bin] = (abandoned[bin] ?? 0) + 1;
  }
  const perSecond = (n: number): number => (n * 1000) / binMs;
  return {
    kind: outcome.kind,
    admittedPerSecond: admitted.map(perSecond),
    rejectedPerSecond: rejected.map(perSecond),
    abandonedPerSecond: abandoned.map(perSecond),
  };
}

/**
 * Size and title of the chart.
 */
export interface TimelineChartOptions {
  /** Subtitle, e.g. the scenario. */
  readonly title?: string;
  /** @defaultValue 1000 */
  readonly widthPx?: number;
  /** @defaultValue 800 */
  readonly heightPx?: number;
}

/**
 * The SVG chart of admissions (top panel), rejections (middle) and abandoned calls (bottom) per
 * second over virtual time, one line per client kind in each panel (its colour, dash and width:
 * see {@link seriesStyle}), with a legend naming the kinds. Drawn headless by ECharts' server-side
 * SVG renderer (no canvas, no DOM).
 *
 * @example
 * ```ts
 * const svg = chartTimelineSvg(report.outcomes, await loadEcharts(), { title: 'worked example' });
 * await writeFile('simulation.svg', svg);
 * ```
 */
export function chartTimelineSvg(
  outcomes: readonly ClientKindOutcome[],
  echarts: EchartsModule,
  options: TimelineChartOptions = {},
): string {
  let spanMs = 1;
  for (const o of outcomes) {
    for (const r of o.requests) if (r.atMs + 1 > spanMs) spanMs = r.atMs + 1;
    for (const atMs of o.abandonedAtMs) if (atMs + 1 > spanMs) spanMs = atMs + 1;
  }
  const binMs = timelineBinMs(spanMs);
  const bins = Math.max(1, Math.ceil(spanMs / binMs));
  const timelines = outcomes.map((o) => timelineOf(o, binMs, bins));
  const xs = Array.from({ length: bins }, (_, i) => (i * binMs) / 1000);
  /** A whole second past the last bin, so the axis ends on a round label. */
  const xMax = Math.ceil((bins * binMs) / 1000);
  const valuesOf = (t: KindTimeline, panel: 0 | 1 | 2): number[] =>
    panel === 0 ? t.admittedPerSecond : panel === 1 ? t.rejectedPerSecond : t.abandonedPerSecond;
  const line = (t: KindTimeline, index: number, panel: 0 | 1 | 2) => {
    const style = seriesStyle(index, timelines.length);
    return {
      name: t.kind,
      type: 'line',
      step: 'end',
      showSymbol: false,
      xAxisIndex: panel,
      yAxisIndex: panel,
      color: KIND_COLORS[t.kind],
      lineStyle: { width: style.widthPx, type: [...style.dash] },
      // Log scale: the opening burst (thousands per second) must not flatten the steady pace;
      // an empty bin has no point (a gap) since log(0) is not drawn.
      data: valuesOf(t, panel).map((y, i) => [xs[i], y > 0 ? y : null]),
    };
  };
  /** The log axis starts at the power of ten below the smallest rate drawn (a slow rate is not cut off). */
  const yMin = (panel: 0 | 1 | 2): number => {
    let least = 1;
    for (const t of timelines)
      for (const y of valuesOf(t, panel)) if (y > 0 && y < least) least = y;
    return 10 ** Math.floor(Math.log10(least));
  };
  const axisName = (name: string) => ({ name, nameLocation: 'middle', nameGap: 40 });
  const widthPx = options.widthPx ?? 1000;
  const heightPx = options.heightPx ?? 800;
  const chart = echarts.init(null, null, {
    renderer: 'svg',
    ssr: true,
    width: widthPx,
    height: heightPx,
  });
  try {
    chart.setOption({
      animation: false,
      aria: { enabled: true },
      backgroundColor: '#ffffff',
      title: {
        text: 'Admissions, rejections and abandoned calls over time, per client kind',
        subtext: `${options.title ?? ''}${options.title ? ' — ' : ''}bins of ${binMs / 1000} s`,
        left: 'center',
      },
      legend: { bottom: 8, itemGap: 28, data: timelines.map((t) => t.kind) },
      grid: [
        { top: 90, height: '20%', left: 70, right: 30 },
        { top: '42%', height: '20%', left: 70, right: 30 },
        { bottom: 100, height: '20%', left: 70, right: 30 },
      ],
      xAxis: [
        { type: 'value', gridIndex: 0, min: 0, max: xMax },
        { type: 'value', gridIndex: 1, min: 0, max: xMax },
        { type: 'value', gridIndex: 2, min: 0, max: xMax, ...axisName('virtual time (s)') },
      ],
      yAxis: ([0, 1, 2] as const).map((panel) => ({
        type: 'log',
        logBase: 10,
        min: yMin(panel),
        gridIndex: panel,
        ...axisName(
          ['admitted / s (log)', 'rejected / s (log)', 'abandoned / s (log)'][panel] ?? '',
        ),
      })),
      series: ([0, 1, 2] as const).flatMap((panel) =>
        timelines.map((t, index) => line(t, index, panel)),
      ),
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}
