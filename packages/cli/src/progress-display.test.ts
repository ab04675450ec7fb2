/**
 * Progress on long work: `simulate` says which client kind it is running and `probe` says it is
 * waiting out the retry slot — one status line redrawn in place in a terminal, plain lines when
 * the output is not a terminal (a pipe, a CI log), nothing with `--json`.
 */

import { createVirtualTime, WORKED_EXAMPLE_POLICY } from 'a2a-ratelimit/simulation';
import { describe, expect, it } from 'vitest';
import { runCliProcess, startServeProcess } from '../../../test/cli-process.helpers.js';
import { runProbe } from './probe.js';
import { startResearchAgent } from './research-agent.js';
import { runSimulateCommand, type SimulateIo } from './simulate-command.js';
import { createStatusLine } from './status-line.js';

const CLEAR = '\r\u001b[2K';

function capture(stderrIsTty: boolean) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const io: SimulateIo = {
    stdout: (t) => stdout.push(t),
    stderr: (t) => stderr.push(t),
    writeText: async () => undefined,
    importModule: (specifier) => import(specifier),
    stderrIsTty,
  };
  return { io, stdout, stderr };
}

describe('simulate progress', () => {
  it('not a terminal: one plain line as each client kind starts and ends, on stderr', async () => {
    const out = capture(false);
    const { exitCode } = await runSimulateCommand({ clients: 'ours,naive' }, out.io);
    expect(exitCode).toBe(0);
    const lines = out.stderr.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toBe('simulating ours (1 of 2): 30 calls…');
    expect(lines[1]).toMatch(/^ours done in \d+\.\d s \(1 of 2\)$/);
    expect(lines[2]).toBe('simulating naive (2 of 2): 30 calls…');
    expect(lines[3]).toMatch(/^naive done in \d+\.\d s \(2 of 2\)$/);
    expect(out.stderr.join('')).not.toContain('\r');
    // The table stays on stdout, unmixed.
    expect(out.stdout.join('')).not.toContain('simulating');
  });

  it('a terminal: one line redrawn in place and cleared at the end', async () => {
    const out = capture(true);
    await runSimulateCommand({ clients: 'ours,naive' }, out.io);
    const text = out.stderr.join('');
    expect(text.startsWith(`${CLEAR}simulating ours (1 of 2)`)).toBe(true);
    expect(text).not.toContain('\n');
    expect(text.endsWith(CLEAR)).toBe(true);
    expect(text.split(CLEAR).filter((s) => s !== '')).toHaveLength(4);
  });

  it('--json: no progress at all', async () => {
    const out = capture(false);
    await runSimulateCommand({ clients: 'ours', json: true }, out.io);
    expect(out.stderr).toEqual([]);
  });
});

describe('probe progress while waiting for the retry slot', () => {
  it('a terminal: a countdown of the seconds left, redrawn in place', async () => {
    // serve's research agent in this process, on the probe's own virtual time: the agent's bucket
    // refills only while the probe waits (a slow machine cannot refill it between the 10 calls),
    // and the retry arrives exactly when the countdown ends.
    const vt = createVirtualTime({ startMs: 1_000_000, autoAdvance: true });
    const agent = await startResearchAgent({
      policies: [WORKED_EXAMPLE_POLICY],
      clock: vt.clock,
      port: 0,
      grpcPort: 0,
    });
    try {
      const writes: string[] = [];
      const report = await runProbe({
        baseUrl: agent.baseUrl,
        binding: 'rest',
        method: 'SendMessage',
        maxRequests: 30,
        callerToken: `progress-${process.pid}`,
        sleep: vt.sleep,
        retryMarginMs: 500,
        status: createStatusLine({ write: (t) => writes.push(t), tty: true }),
      });
      expect(report.admittedBefore).toBe(10);
      const frames = writes
        .join('')
        .split(CLEAR)
        .filter((s) => s !== '');
      // 1 s hinted + 500 ms margin, in 250 ms ticks: 1.5, 1.3 (1.25), 1.0, 0.8, 0.5, 0.3 s left.
      expect(frames[0]).toBe(
        'refused on call 11; waiting for the retry slot (1 s + 500 ms), then re-sending the same messageId: 1.5 s of 1.5 s left',
      );
      expect(frames.filter((f) => f.includes('s left'))).toHaveLength(6);
      expect(frames.at(-1)).toMatch(/: done$/);
      expect(writes.at(-1)).toBe(CLEAR);
      // The countdown waited the whole delay: the re-sent message was admitted.
      expect(report.checks.find((c) => c.name === 'retry')?.status).toBe('pass');
      expect(vt.nowMs()).toBe(1_000_000 + 1_500);
    } finally {
      await agent.close();
    }
  });

  it('not a terminal (`probe` in a pipe): one plain line on stderr, the report on stdout', async () => {
    const serve = await startServeProcess();
    try {
      const run = await runCliProcess([
        'probe',
        serve.baseUrl,
        '--binding',
        'rest',
        '--caller-token',
        `progress-cli-${process.pid}`,
      ]);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      // Two real processes on the real clock: the agent refills a token a second, so on a slow
      // machine the refusal can come a call later than 11. The line names the call the report
      // names (the countdown test above pins 11 on virtual time).
      const refused = /^refused on call (\d+) after (\d+) admitted/m.exec(run.stdout);
      expect(refused, run.stdout).not.toBeNull();
      const call = Number(refused?.[1]);
      expect(Number(refused?.[2])).toBe(call - 1);
      expect(call).toBeGreaterThanOrEqual(11);
      expect(run.stderr).toBe(
        `probe: at most 100 requests to ${serve.baseUrl}/a2a/rest: SendMessage until one is refused, then that call once more after its delay; each SendMessage the agent admits runs a real task there (up to 100). Cap with --max-requests N.\n` +
          `refused on call ${call}; waiting for the retry slot (1 s + 500 ms), then re-sending the same messageId: 1.5 s\n`,
      );
      expect(run.stdout).toContain('PASS  retry');
    } finally {
      await serve.stop();
    }
  });
});
