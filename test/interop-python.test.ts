/**
 * A Python caller that sees only what the official Python a2a-sdk keeps of a JSON-RPC rejection
 * — `InternalError.data` = `ErrorInfo.metadata` (test/fixtures/python/jsonrpc_sdk_client.py,
 * standard library only) — against a real SDK agent limited by `createLimiter` (HTTP 200, our
 * default): from `data` alone it reads the delay and the kind, equal to RetryInfo and the reason
 * of the same answer, for a quota and an overload refusal. Under CI=true a missing python3 fails.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Policy } from 'a2a-ratelimit';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeJsonRpcRejection, kindOfReason } from './rejection-wire.helpers.js';
import { startAgent, type TestAgent } from './server-agent.helpers.js';

const SCRIPT = resolve(import.meta.dirname, 'fixtures/python/jsonrpc_sdk_client.py');
const hasPython = spawnSync('python3', ['--version']).status === 0;
const required = process.env.CI === 'true';

/** The worked example's policy: 60 SendMessage a minute per caller, burst 10. */
const perCaller: Policy = {
  name: 'per-caller',
  kind: 'rate',
  scope: 'caller',
  methods: ['SendMessage'],
  limit: 60,
  windowSeconds: 60,
  burst: 10,
};
/** An agent-wide protective rate answered as overload: 30 GetTask a minute, burst 1 (2 s apart). */
const agentGuard: Policy = {
  name: 'get-task-guard',
  kind: 'rate',
  scope: 'agent',
  methods: ['GetTask'],
  limit: 30,
  windowSeconds: 60,
  burst: 1,
  rejectAs: 'overload',
};

interface PythonResult {
  readonly index: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly status?: number;
  readonly data?: Record<string, string> | null;
  readonly delaySeconds?: number | null;
  readonly kind?: string | null;
  readonly envelope?: string;
}

let agent: TestAgent | undefined;
let dir: string | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function runPython(url: string, calls: unknown[]): Promise<PythonResult[]> {
  dir = mkdtempSync(join(tmpdir(), 'a2a-py-'));
  const callsPath = join(dir, 'calls.json');
  writeFileSync(callsPath, JSON.stringify(calls));
  // Asynchronous: the agent answers from this same process.
  const { stdout } = await promisify(execFile)('python3', [SCRIPT, url, callsPath], {
    timeout: 60_000,
  });
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as PythonResult);
}

const sendMessage = (i: number) => ({
  method: 'SendMessage',
  caller: 'py-caller',
  params: {
    message: { messageId: `py-${i}`, role: 'ROLE_USER', parts: [{ text: 'task' }] },
  },
});
const getTask = { method: 'GetTask', caller: 'py-caller', params: { id: 'no-such-task' } };

describe('a Python a2a-sdk caller (JSON-RPC, HTTP 200)', () => {
  it('python3 is on the machine (required under CI=true)', () => {
    if (required) expect(hasPython, 'python3 is required when CI=true').toBe(true);
  });

  it.runIf(hasPython || required)(
    'reads the delay and the kind from InternalError.data alone, equal to RetryInfo and the reason',
    async () => {
      agent = await startAgent({ policies: [perCaller, agentGuard] });
      const calls = [...Array.from({ length: 11 }, (_, i) => sendMessage(i)), getTask, getTask];
      const results = await runPython(agent.jsonRpcUrl, calls);
      expect(results).toHaveLength(13);

      // The burst: ten admitted; the 11th is the SDK's InternalError.
      expect(results.slice(0, 10).every((r) => r.ok)).toBe(true);
      const quota = results[10];
      // The first GetTask is admitted (its task is unknown: the SDK's TaskNotFoundError, no data).
      expect(results[11]).toMatchObject({ ok: false, error: 'TaskNotFoundError', data: null });
      const overload = results[12];

      const summary: Record<string, unknown> = {};
      for (const [name, result, expectedKind] of [
        ['quota', quota, 'quota'],
        ['overload', overload, 'overload'],
      ] as const) {
        expect(result?.error).toBe('InternalError');
        // `.data` is only ErrorInfo.metadata: no reason, no domain, no RetryInfo.
        expect(result?.data).not.toHaveProperty('reason');
        expect(result?.data).not.toHaveProperty('domain');
        const decoded = decodeJsonRpcRejection(200, {}, result?.envelope ?? '');
        expect(decoded).toBeDefined();
        if (decoded === undefined || result === undefined) return;
        // What Python read from `data` alone equals what RetryInfo and the reason say.
        const retryInfoSeconds = retryInfoDelaySeconds(result.envelope ?? '');
        expect(result.delaySeconds).toBe(retryInfoSeconds);
        expect(result.delaySeconds).toBe(decoded.delaySeconds);
        expect(result.kind).toBe(kindOfReason(decoded.reason));
        expect(result.kind).toBe(expectedKind);
        expect(result.data?.policy).toBe(decoded.policy);
        summary[name] = {
          reason: decoded.reason,
          retryInfo: `${retryInfoSeconds}s`,
          data: result.data,
        };
      }
      // The two refusals differ in `data`, not only in English text.
      expect(quota?.data?.kind).not.toBe(overload?.data?.kind);
      expect(quota?.delaySeconds).toBe(1);
      expect(overload?.delaySeconds).toBe(2);
      console.log('[interop-python] what a2a-sdk callers keep', JSON.stringify(summary));
    },
    60_000,
  );
});

/** RetryInfo's delay in a JSON-RPC envelope, seconds, read independently of our decoders. */
function retryInfoDelaySeconds(envelope: string): number | undefined {
  const body = JSON.parse(envelope) as { error: { data: Record<string, unknown>[] } };
  const retry = body.error.data.find(
    (d) => d['@type'] === 'type.googleapis.com/google.rpc.RetryInfo',
  );
  const match = /^(\d+)(?:\.(\d+))?s$/.exec(String(retry?.retryDelay));
  return match === null ? undefined : Number(`${match[1]}.${match[2] ?? '0'}`);
}
