/**
 * Attack (operator): `serve --config`'s file reloader under the ways config files really change.
 * A Kubernetes ConfigMap mount is the common one: `policies.json` is a symlink to
 * `..data/policies.json`, and an update writes a new `..<timestamp>` directory and renames a
 * new `..data` symlink over the old one — no event ever names `policies.json`.
 */

import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { watchPolicyFile } from './policy-file-reloader.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Longest wait for a reload: a guard against a hang on a loaded machine, not a bound. */
const HANG_MS = 20_000;

async function until(withinMs: number, condition: () => boolean): Promise<boolean> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > withinMs) return false;
    await sleep(20);
  }
  return true;
}

describe('attack: the policy file reloader', () => {
  it('follows a ConfigMap-style update (the ..data symlink swapped atomically)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attack-reload-'));
    dirs.push(dir);
    mkdirSync(join(dir, '..v1'));
    writeFileSync(join(dir, '..v1', 'policies.json'), '{"v":1}');
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync(join('..data', 'policies.json'), join(dir, 'policies.json'));
    const applied: string[] = [];
    const reloader = watchPolicyFile({
      file: join(dir, 'policies.json'),
      apply: async (file) => {
        const text = await readFile(file, 'utf8');
        applied.push(text);
        return text;
      },
      log: () => undefined,
      settleMs: 20,
      signal: 'SIGUSR2',
    });
    // The running set, read (and its bytes remembered) before anything changes.
    await reloader.reload();
    // kubelet's update: a new version directory, a temporary link, renamed over ..data.
    mkdirSync(join(dir, '..v2'));
    writeFileSync(join(dir, '..v2', 'policies.json'), '{"v":2}');
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..v1'), { recursive: true });
    const reloaded = await until(HANG_MS, () => applied.includes('{"v":2}'));
    reloader.close();
    expect(reloaded).toBe(true);
  });

  it('a signal storm reloads a bounded number of times and ends on the last content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attack-reload-'));
    dirs.push(dir);
    const file = join(dir, 'policies.json');
    writeFileSync(file, '{"v":0}');
    const applied: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const reloader = watchPolicyFile({
      file,
      apply: async (f) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await sleep(30);
        const text = await readFile(f, 'utf8');
        applied.push(text);
        inFlight--;
        return text;
      },
      log: () => undefined,
      watchFile: false,
      signal: 'SIGUSR2',
    });
    for (let i = 1; i <= 200; i++) {
      writeFileSync(file, `{"v":${i}}`);
      process.kill(process.pid, 'SIGUSR2');
      if (i % 20 === 0) await sleep(5);
    }
    // The coalesced reloads run out (each takes 30 ms) on the last content.
    await until(HANG_MS, () => inFlight === 0 && applied.at(-1) === '{"v":200}');
    reloader.close();
    expect(maxInFlight).toBe(1);
    expect(applied.length).toBeLessThan(60);
    expect(applied.at(-1)).toBe('{"v":200}');
  });

  it('a reload refused by a transient failure (the store timed out) is retried on the next save of the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attack-reload-'));
    dirs.push(dir);
    const file = join(dir, 'policies.json');
    writeFileSync(file, '{"v":1}');
    let outage = false;
    let refused = 0;
    const applied: string[] = [];
    const reloader = watchPolicyFile({
      file,
      apply: async (f) => {
        if (outage) {
          refused++;
          throw new Error('RedisStore: timed out after 500 ms');
        }
        const text = await readFile(f, 'utf8');
        applied.push(text);
        return text;
      },
      log: () => undefined,
      settleMs: 20,
      signal: 'SIGUSR2',
      // As serve classifies it: not a bad file (a CliError) but a store that did not answer.
      isTransient: (error) => String(error).includes('timed out'),
    });
    await reloader.reload();
    outage = true;
    writeFileSync(file, '{"v":2}');
    // The save's reload was refused by the outage (waited for, so it is not the later save's).
    expect(await until(HANG_MS, () => refused > 0)).toBe(true);
    outage = false;
    expect(applied).not.toContain('{"v":2}');
    // The operator saves the file again (same bytes), as the log line invites.
    writeFileSync(file, '{"v":2}');
    const retried = await until(HANG_MS, () => applied.includes('{"v":2}'));
    reloader.close();
    expect(retried).toBe(true);
  });

  it('an atomic replace (write a temp file, rename over) and a delete + recreate are both followed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attack-reload-'));
    dirs.push(dir);
    const file = join(dir, 'policies.json');
    writeFileSync(file, '{"v":1}');
    const applied: string[] = [];
    const lines: string[] = [];
    const reloader = watchPolicyFile({
      file,
      apply: async (f) => {
        const text = await readFile(f, 'utf8');
        applied.push(text);
        return text;
      },
      log: (line) => lines.push(line),
      settleMs: 20,
      signal: 'SIGUSR2',
    });
    await reloader.reload();
    writeFileSync(join(dir, '.policies.json.tmp'), '{"v":2}');
    renameSync(join(dir, '.policies.json.tmp'), file);
    expect(await until(HANG_MS, () => applied.includes('{"v":2}'))).toBe(true);
    rmSync(file);
    expect(await until(HANG_MS, () => lines.some((l) => l.includes('kept the running')))).toBe(
      true,
    );
    writeFileSync(file, '{"v":3}');
    expect(await until(HANG_MS, () => applied.includes('{"v":3}'))).toBe(true);
    reloader.close();
  });
});
