/**
 * @module status-line
 * A status line for long work that is not a count of calls: redrawn in place in a terminal, plain
 * lines otherwise.
 */

/**
 * Where a status line writes and whether it may redraw.
 *
 * @example
 * ```ts
 * const target: StatusTarget = { write: (t) => process.stderr.write(t), tty: process.stderr.isTTY === true };
 * ```
 */
export interface StatusTarget {
  readonly write: (text: string) => void;
  /** Redraw in place (a terminal); false: plain lines. */
  readonly tty: boolean;
}

/**
 * A status line.
 *
 * @example
 * ```ts
 * const status = createStatusLine({ write: (t) => process.stderr.write(t), tty: false });
 * status.step('simulating ours (1 of 3)');
 * status.done();
 * ```
 */
export interface StatusLine {
  /** A new step: a plain line, or the status line redrawn. */
  step(text: string): void;
  /**
   * Waits `ms` (with `sleep`) showing `text` and, in a terminal, the seconds left (redrawn every
   * `tickMs`, default 250).
   */
  wait(
    text: string,
    ms: number,
    sleep: (ms: number) => Promise<void>,
    tickMs?: number,
  ): Promise<void>;
  /** Clears the status line (terminal); nothing otherwise. */
  done(): void;
}

/** Clears the terminal line and returns to its start. */
const CLEAR = '\r\u001b[2K';

/**
 * Creates a status line on `target`: in a terminal one line redrawn in place (with a countdown
 * while waiting), otherwise plain lines, one per step, that read well in a log.
 *
 * @example
 * ```ts
 * const status = createStatusLine({ write: (t) => process.stderr.write(t), tty: process.stderr.isTTY === true });
 * await status.wait('waiting for the retry slot', 5_500, (ms) => new Promise((r) => setTimeout(r, ms)));
 * ```
 */
export function createStatusLine(target: StatusTarget): StatusLine {
  let shown = false;
  const draw = (text: string): void => {
    target.write(`${CLEAR}${text}`);
    shown = true;
  };
  return {
    step(text) {
      if (target.tty) draw(text);
      else target.write(`${text}\n`);
    },
    async wait(text, ms, sleep, tickMs = 250) {
      const totalSeconds = (ms / 1000).toFixed(1);
      if (!target.tty) {
        target.write(`${text}: ${totalSeconds} s\n`);
        await sleep(ms);
        return;
      }
      let leftMs = ms;
      while (leftMs > 0) {
        draw(`${text}: ${(leftMs / 1000).toFixed(1)} s of ${totalSeconds} s left`);
        const stepMs = Math.min(tickMs, leftMs);
        await sleep(stepMs);
        leftMs -= stepMs;
      }
      draw(`${text}: done`);
    },
    done() {
      if (target.tty && shown) target.write(CLEAR);
      shown = false;
    },
  };
}
