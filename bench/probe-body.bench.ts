/**
 * @module probe-body.bench
 * `npm run bench:probe-body`: what a 120 MB rejection body costs `probe` (memory, bytes the server
 * got out), against reading it whole. Prints JSON.
 */

import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PROBE_MAX_BODY_BYTES } from '../packages/cli/src/probe-capped-body.js';
import { httpProbeTransport } from '../packages/cli/src/probe-transport.js';

const BODY_BYTES = 120 * 1024 * 1024;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MiB = 1024 * 1024;

interface ReaderResult {
  readonly rssBeforeMiB: number;
  readonly rssAfterMiB: number;
  readonly peakRssMiB: number;
  readonly bodyChars: number;
}

async function readOnce(mode: 'capped' | 'whole', url: string): Promise<ReaderResult> {
  const rssBefore = process.memoryUsage().rss;
  let bodyChars: number;
  if (mode === 'capped') {
    const transport = httpProbeTransport({ binding: 'rest', endpoint: url, timeoutMs: 60_000 });
    const answer = await transport.send(transport.build('SendMessage'));
    bodyChars = answer.body.length;
  } else {
    const response = await fetch(`${url}/message:send`, { method: 'POST', body: '{}' });
    bodyChars = (await response.text()).length;
  }
  const rssAfter = process.memoryUsage().rss;
  return {
    rssBeforeMiB: Math.round((rssBefore / MiB) * 10) / 10,
    rssAfterMiB: Math.round((rssAfter / MiB) * 10) / 10,
    // maxRSS is in KiB.
    peakRssMiB: Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10,
    bodyChars,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function child(mode: 'capped' | 'whole', url: string): Promise<ReaderResult> {
  const self = fileURLToPath(import.meta.url);
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=a2a-ratelimit-source', self, 'reader', mode, url],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await new Promise<void>((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`reader exited ${code}`)),
    ),
  );
  return JSON.parse(out) as ReaderResult;
}

/**
 * Method: a loopback server answers SendMessage with 429 and 120 MB; a fresh child process reads
 * it once through the probe's REST transport (up to `PROBE_MAX_BODY_BYTES`, the rest cancelled)
 * and once the way the probe read bodies before (`response.text()`, the peer). Per reader: RSS
 * before and after, peak RSS, and the bytes the server got out before the reader hung up. Medians
 * of `RUNS` runs each, alternated.
 */
async function main(): Promise<void> {
  let served = 0;
  let done: (() => void) | undefined;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server = createServer((req, res) => {
    req.resume();
    served = 0;
    res.once('close', () => done?.());
    res.writeHead(429, {
      'content-type': 'application/a2a+json',
      'retry-after': '1',
      'content-length': String(BODY_BYTES),
    });
    const pump = (): void => {
      while (served < BODY_BYTES && !res.destroyed) {
        served += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (served >= BODY_BYTES) res.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const runs: Record<'capped' | 'whole', (ReaderResult & { servedMiB: number })[]> = {
    capped: [],
    whole: [],
  };
  for (let i = 0; i < RUNS; i++) {
    for (const mode of ['capped', 'whole'] as const) {
      const closed = new Promise<void>((resolve) => {
        done = resolve;
      });
      const result = await child(mode, url);
      await closed;
      runs[mode].push({ ...result, servedMiB: Math.round((served / MiB) * 10) / 10 });
    }
  }
  server.close();
  const summary = (list: (ReaderResult & { servedMiB: number })[]) => ({
    rssBeforeMiB: median(list.map((r) => r.rssBeforeMiB)),
    rssAfterMiB: median(list.map((r) => r.rssAfterMiB)),
    peakRssMiB: median(list.map((r) => r.peakRssMiB)),
    bodyChars: median(list.map((r) => r.bodyChars)),
    servedMiB: median(list.map((r) => r.servedMiB)),
  });
  const capped = summary(runs.capped);
  const whole = summary(runs.whole);
  console.log(
    JSON.stringify(
      {
        bodyMiB: BODY_BYTES / MiB,
        capBytes: PROBE_MAX_BODY_BYTES,
        runs: RUNS,
        probe: capped,
        peerWholeText: whole,
        peakRatioPeerOverProbe: Math.round((whole.peakRssMiB / capped.peakRssMiB) * 10) / 10,
      },
      null,
      2,
    ),
  );
}

if (process.argv[2] === 'reader') {
  const mode = process.argv[3] === 'whole' ? 'whole' : 'capped';
  const result = await readOnce(mode, process.argv[4] ?? '');
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
} else {
  await main();
}
