/**
 * `a2a-ratelimit demo --time-scale 10 --json` as a user runs it (a child process from source), on
 * each binding: a real SDK agent on loopback with our adapters, the orchestrator on our client,
 * one scaled clock for both. Ours: 10 admitted at once, 20 on their first retry, none abandoned,
 * 50 requests seen by the agent. The bare-500 agent with the naive client: at least 20 retries
 * rejected again and at least one call abandoned. Planned (our client reading the policies on the
 * card the SDK fetched): 10 at once, the other 20 at the policy's pace, nothing rejected, 30
 * requests, within 21 s.
 */

import { describe, expect, it } from 'vitest';
import { lastLine, runCliProcess } from './cli-process.helpers.js';

interface RunJson {
  admittedAtOnce: number;
  admittedPaced: number;
  rejected: number;
  admittedOnFirstRetry: number;
  laterRetries: number;
  rejectedRetries: number;
  abandoned: number;
  totalSeconds: number;
  requestsSeenByAgent: number;
}

describe.each(['jsonrpc', 'rest', 'grpc'] as const)(
  'demo --binding %s --time-scale 10 --json',
  (binding) => {
    it('ours: 10 at once, 20 on first retry, 0 abandoned, 50 seen; naive: ≥ 20 rejected retries, ≥ 1 abandoned; planned: 10 at once, 0 rejected, 30 seen, ≤ 21 s', async () => {
      const run = await runCliProcess([
        'demo',
        '--binding',
        binding,
        '--time-scale',
        '10',
        '--json',
      ]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const report = JSON.parse(lastLine(run.stdout)) as {
        ours: RunJson;
        naive: RunJson;
        planned: RunJson;
      };
      console.log(`[demo ${binding}]`, JSON.stringify(report));
      const keys = [
        'admittedAtOnce',
        'admittedOnFirstRetry',
        'laterRetries',
        'rejectedRetries',
        'abandoned',
        'totalSeconds',
        'requestsSeenByAgent',
      ];
      for (const key of keys) {
        expect(report.ours).toHaveProperty(key);
        expect(report.naive).toHaveProperty(key);
        expect(report.planned).toHaveProperty(key);
      }
      expect(report.ours).toMatchObject({
        admittedAtOnce: 10,
        admittedOnFirstRetry: 20,
        laterRetries: 0,
        rejectedRetries: 0,
        abandoned: 0,
        requestsSeenByAgent: 50,
      });
      // The k-th rejected call was told k seconds: the last one lands after about 20 s (scaled).
      expect(report.ours.totalSeconds).toBeGreaterThanOrEqual(20);
      expect(report.ours.totalSeconds).toBeLessThan(26);
      expect(report.naive.admittedAtOnce).toBe(10);
      expect(report.naive.rejectedRetries).toBeGreaterThanOrEqual(20);
      expect(report.naive.abandoned).toBeGreaterThanOrEqual(1);
      expect(report.naive.requestsSeenByAgent).toBeGreaterThan(50);
      expect(report.planned).toMatchObject({
        admittedAtOnce: 10,
        admittedPaced: 20,
        rejected: 0,
        admittedOnFirstRetry: 0,
        rejectedRetries: 0,
        abandoned: 0,
        requestsSeenByAgent: 30,
      });
      // The 20th paced send conforms at 20 s; its answer comes back a moment later.
      expect(report.planned.totalSeconds).toBeGreaterThanOrEqual(20);
      expect(report.planned.totalSeconds).toBeLessThanOrEqual(21);
      expect(report.ours.admittedPaced).toBe(0);
    });
  },
);

describe('demo without --json', () => {
  it('prints progress lines (stdout is not a TTY) and the side-by-side table', async () => {
    const run = await runCliProcess(['demo', '--binding', 'rest', '--time-scale', '20']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/ours \(RetryInfo\): 30\/30 calls done/);
    expect(run.stdout).toMatch(/naive \(bare 500\): 30\/30 calls done/);
    expect(run.stdout).toMatch(/planned \(card\): 30\/30 calls done/);
    expect(run.stdout).toMatch(/admitted at once\s+10\s+10\s+10/);
    expect(run.stdout).toMatch(/admitted when paced\s+0\s+0\s+20/);
    expect(run.stdout).toMatch(/admitted on first retry\s+20\s+\d+\s+0/);
    expect(run.stdout).toMatch(/requests the agent saw\s+50\s+\d+\s+30/);
    // The table says its clock is scaled, and shows the real seconds too.
    expect(run.stdout).toMatch(/total seconds \(clock × 20\)\s+\d+\.\d\s+/);
    expect(run.stdout).toMatch(/real seconds\s+\d+\.\d\s+/);
    expect(run.stdout).toContain("Seconds are on the demo's scaled clock");
    expect(run.stdout).toContain('the difference is the response format');
    expect(run.stdout).toContain('Planning from the card, nothing was rejected');
  });
});
