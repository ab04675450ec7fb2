/**
 * @module progress-display
 * The demo's live progress: a bar per run in a terminal, plain lines in a pipe or a CI log.
 */

import cliProgress from 'cli-progress';
import type { DemoRunKind, FanOutProgress } from './fan-out-demo.js';

/**
 * Receives progress and draws it.
 *
 * @example
 * ```ts
 * const display: ProgressDisplay = createProgressDisplay({ stream: process.stdout });
 * display.update(progress);
 * display.stop();
 * ```
 */
export interface ProgressDisplay {
  /** Shows the latest counters of a run. */
  update(progress: FanOutProgress): void;
  /** Finishes the display (leaves the bars on screen). */
  stop(): void;
}

/**
 * Options of {@link createProgressDisplay}.
 */
export interface ProgressDisplayOptions {
  /** Where to draw. */
  readonly stream: NodeJS.WriteStream;
  /** Draw bars; default `stream.isTTY`. */
  readonly tty?: boolean;
  /** Label of each run; default its kind. */
  readonly labels?: Readonly<Partial<Record<DemoRunKind, string>>>;
}

/** Finished calls between two plain progress lines. */
const PLAIN_LINE_EVERY_CALLS = 10;

function describe(p: FanOutProgress): string {
  return `${p.settled}/${p.calls} calls done, agent saw ${p.requests} requests (${p.admitted} admitted, ${p.rejected} rejected), ${p.elapsedSeconds.toFixed(1)} s`;
}

/**
 * Creates the display for the demo's runs: one bar per run (cli-progress) when the output is a
 * terminal, else plain lines — one at the start of a run and one every few finished calls.
 *
 * @example
 * ```ts
 * const display = createProgressDisplay({ stream: process.stdout });
 * await runFanOut({ kind: 'ours', binding: 'jsonrpc', onProgress: (p) => display.update(p) });
 * display.stop();
 * ```
 */
export function createProgressDisplay(options: ProgressDisplayOptions): ProgressDisplay {
  const tty = options.tty ?? options.stream.isTTY === true;
  const label = (kind: DemoRunKind): string => options.labels?.[kind] ?? kind;
  if (!tty) {
    const lastLine = new Map<DemoRunKind, number>();
    return {
      update(p) {
        const previous = lastLine.get(p.kind);
        const due =
          previous === undefined ||
          p.settled === p.calls ||
          p.settled >= previous + PLAIN_LINE_EVERY_CALLS;
        if (!due || (previous !== undefined && previous === p.settled)) return;
        lastLine.set(p.kind, p.settled);
        options.stream.write(`${label(p.kind)}: ${describe(p)}\n`);
      },
      stop() {},
    };
  }
  const width = Math.max(...(['ours', 'naive'] as const).map((k) => label(k).length));
  const multi = new cliProgress.MultiBar(
    {
      stream: options.stream,
      format:
        '{label} |{bar}| {value}/{total} calls done | agent saw {requests} ({rejected} rejected) | {seconds} s',
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      fps: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const bars = new Map<DemoRunKind, cliProgress.SingleBar>();
  return {
    update(p) {
      const payload = {
        label: label(p.kind).padEnd(width),
        requests: p.requests,
        rejected: p.rejected,
        seconds: p.elapsedSeconds.toFixed(1),
      };
      const bar = bars.get(p.kind);
      if (bar === undefined) bars.set(p.kind, multi.create(p.calls, p.settled, payload));
      else bar.update(p.settled, payload);
    },
    stop() {
      multi.stop();
    },
  };
}
