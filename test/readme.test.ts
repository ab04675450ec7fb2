/**
 * The README's quick starts compile: each `ts` code block is written out with the package's
 * subpaths mapped to the sources and type-checked with the project's strict settings (a block
 * that uses `card`, `executor`, `app` without defining them gets them declared). The server quick
 * start also RUNS as written (its subpaths mapped to the sources, its ports from PORT / GRPC_PORT):
 * the README's curl lines get the card and an answer on JSON-RPC and REST, the SDK's gRPC client
 * gets one on gRPC, and the 11th SendMessage is refused with 429, Retry-After and RateLimit. The
 * client quick start RUNS as written too, against that agent on loopback (its agent's addresses
 * replaced by the agent's): a first run is answered, and once the caller has spent far more than
 * its burst, its `catch` really catches the `RetryBudgetExceededError` and prints the delay asked.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './fixtures/nginx/nginx-gateway.js';

const root = resolve(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
const dir = join(root, '.tmp', `readme-${process.pid}`);

const SUBPATHS: Record<string, string> = {
  'a2a-ratelimit/server/express': '../../src/server/express/index.js',
  'a2a-ratelimit/server/grpc': '../../src/server/grpc/index.js',
  'a2a-ratelimit/server': '../../src/server/index.js',
  'a2a-ratelimit/client/grpc': '../../src/client/grpc.js',
  'a2a-ratelimit/client': '../../src/client/index.js',
};

const YOUR_AGENT = `
import type { AgentCard } from '@a2a-js/sdk';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import express from 'express';
declare const card: AgentCard;
declare const executor: AgentExecutor;
const app = express();
`;

/** A running server quick start: its ports, everything it printed, and how to stop it. */
interface QuickStartServer {
  readonly port: number;
  readonly grpcPort: number;
  output(): string;
  stop(): void;
}

/** Writes the README's package subpaths as the sources (`.ts`), so a block runs under tsx. */
function onSources(code: string): string {
  return code.replace(/from '(a2a-ratelimit[^']*)'/g, (_, spec: string) => {
    const target = SUBPATHS[spec];
    if (target === undefined) throw new Error(`README imports ${spec}: add it to SUBPATHS`);
    return `from '${target.replace(/\.js$/, '.ts')}'`;
  });
}

/** Starts the README's server quick start as written, on free ports; resolves once it listens. */
async function startServerQuickStart(name: string): Promise<QuickStartServer> {
  const server = blocks.find((b) => b.includes('createLimiter') && b.includes('const card = '));
  expect(server).toBeDefined();
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.ts`);
  writeFileSync(file, onSources(server ?? ''));
  const [port, grpcPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: root,
    env: { ...process.env, PORT: String(port), GRPC_PORT: String(grpcPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  for (let i = 0; i < 300 && !output.includes('A2A gRPC on'); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, grpcPort, output: () => output, stop: () => child.kill('SIGTERM') };
}

/** Runs a script to its end (at most `timeoutMs`): exit code and everything it printed. */
function runScript(
  file: string,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      setImmediate(() => resolveRun({ code, output }));
    });
  });
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README', () => {
  it('has a server and a client quick start', () => {
    expect(blocks.some((b) => b.includes('createLimiter'))).toBe(true);
    expect(blocks.some((b) => b.includes('createRetryingFetch'))).toBe(true);
  });

  it('quick starts type-check against the sources', () => {
    mkdirSync(dir, { recursive: true });
    const files: string[] = [];
    blocks.forEach((block, i) => {
      let code = block.replace(/from '(a2a-ratelimit[^']*)'/g, (_, spec: string) => {
        const target = SUBPATHS[spec];
        if (target === undefined) throw new Error(`README imports ${spec}: add it to SUBPATHS`);
        return `from '${target}'`;
      });
      // A block that defines its own agent (the server quick start) needs nothing added.
      if (code.includes('createLimiter') && !code.includes('const card = '))
        code = YOUR_AGENT + code;
      const file = join(dir, `block-${i}.ts`);
      writeFileSync(file, `${code}\nexport {};\n`);
      files.push(file);
    });
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.base.json',
        compilerOptions: { noEmit: true, types: ['node'], noUnusedLocals: false },
        files: files.map((f) => f.slice(dir.length + 1)),
      }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync('node', [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    } catch (error) {
      throw new Error(
        `README quick start does not compile:\n${(error as { stdout?: string }).stdout ?? ''}`,
      );
    }
  });

  it('the server quick start runs as written; the curl lines and a gRPC call get answers, the 11th call a 429', async () => {
    const agent = await startServerQuickStart('server-quick-start');
    const { port } = agent;
    try {
      const output = agent.output();
      expect(output).toContain(`A2A agent on http://127.0.0.1:${port}`);
      expect(output).toContain(`A2A gRPC on 127.0.0.1:${agent.grpcPort}`);

      // The README's curl lines, on this run's ports.
      const shell = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
      const curls = shell
        .flatMap((b) => b.split('\n'))
        .filter((l) => l.startsWith('curl '))
        .map((l) => l.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
      expect(curls).toHaveLength(3);
      for (const line of curls) expect(line).toContain("-H 'A2A-Version: 1.0'");
      const run = promisify(execFile);
      const outputs: string[] = [];
      // The first charged call: the burst refills one a second from here on (real time).
      const firstCallAtMs = performance.now();
      for (const line of curls) outputs.push((await run('bash', ['-c', line])).stdout);
      const [cardText = '', jsonRpc = '', rest = ''] = outputs;
      expect(JSON.parse(cardText).capabilities.extensions[0].uri).toContain('ratelimit');
      expect(JSON.parse(jsonRpc)).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        result: { message: { parts: [{ text: 'on it' }] } },
      });
      expect(rest).toMatch(/^HTTP\/1\.1 200/);
      expect(rest.toLowerCase()).toContain('ratelimit-policy:');
      // The same curl lines again (same messageIds): the quick start's executor answers with a
      // Message (a fresh UUID each run), and each copy gets that same Message, not a second run.
      const restBody = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
      const jsonRpcAgain = (await run('bash', ['-c', curls[1] ?? ''])).stdout;
      expect(JSON.parse(jsonRpcAgain).result).toEqual(JSON.parse(jsonRpc).result);
      const restAgain = (await run('bash', ['-c', curls[2] ?? ''])).stdout;
      expect(restAgain).toMatch(/^HTTP\/1\.1 200/);
      expect(restBody(restAgain).message.messageId).toMatch(/^[0-9a-f-]{36}$/);
      expect(restBody(restAgain)).toEqual(restBody(rest));

      // gRPC through the SDK's client, from the card the agent serves.
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new GrpcTransportFactory()],
          preferredTransports: ['GRPC'],
        }),
      );
      const client = await factory.createFromUrl(`http://127.0.0.1:${port}`);
      const request = SendMessageRequest.fromJSON({
        message: { messageId: 'readme-grpc', role: 'ROLE_USER', parts: [{ text: 'x' }] },
      });
      const answer = await client.sendMessage(request);
      expect(JSON.stringify(answer)).toContain('on it');
      expect(await client.sendMessage(request)).toEqual(answer);

      // Three calls so far from this address (the copies were not charged); the burst is 10: the
      // 11th is refused — or a later one when the run took over a second, one per second it took
      // (the policy refills one a second; a loaded machine can be that slow).
      const statuses: number[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 30 && refused === undefined; i++) {
        const response = await fetch(`http://127.0.0.1:${port}/a2a/rest/message:send`, {
          method: 'POST',
          headers: { 'a2a-version': '1.0', 'content-type': 'application/a2a+json' },
          body: JSON.stringify({
            message: { messageId: `burst-${i}`, role: 'ROLE_USER', parts: [{ text: 'x' }] },
          }),
        });
        statuses.push(response.status);
        if (response.status === 429) refused = response;
        else await response.text();
      }
      const refilled = Math.floor((performance.now() - firstCallAtMs) / 1000);
      expect(statuses.slice(0, 7)).toEqual([200, 200, 200, 200, 200, 200, 200]);
      expect(statuses.at(-1)).toBe(429);
      expect(statuses.filter((s) => s === 429)).toHaveLength(1);
      expect(statuses.length).toBeLessThanOrEqual(8 + refilled);
      expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused?.headers.get('ratelimit')).toContain('"per-caller";r=0');
      const body = (await refused?.json()) as { error: { status: string } };
      expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
    } finally {
      agent.stop();
    }
  });

  it('the client quick start runs as written against that agent; its catch catches a budget refusal', async () => {
    const client = blocks.find((b) => b.includes('createRetryingFetch') && b.includes('catch'));
    expect(client).toBeDefined();
    const agent = await startServerQuickStart('server-for-client');
    try {
      expect(agent.output()).toContain('A2A gRPC on');
      // The README's agent, replaced by the one on loopback (its card names its own addresses).
      const code = onSources(client ?? '')
        .replaceAll('https://agents.example.com', `http://127.0.0.1:${agent.port}`)
        .replaceAll('agents.example.com:50051', `127.0.0.1:${agent.grpcPort}`);
      expect(code).not.toContain('example.com');
      const file = join(dir, 'client-quick-start.ts');
      writeFileSync(file, code);

      // A caller with its burst left: answered, nothing caught, nothing printed.
      const first = await runScript(file, 60_000);
      expect(first).toEqual({ code: 0, output: '' });

      // Spend the caller (the agent keys anonymous callers by address): 90 more messages than the
      // burst hold 90 slots, so the next one is asked to wait about 90 s, more than the quick
      // start's maxSingleWaitMs of 30 s even after a minute of refill on a loaded machine (with
      // 40 slots, a run whose spending and script start took over 10 s was asked for less than
      // 30 s, waited, and was answered).
      for (let i = 0; i < 100; i++) {
        const response = await fetch(`http://127.0.0.1:${agent.port}/a2a/rest/message:send`, {
          method: 'POST',
          headers: { 'a2a-version': '1.0', 'content-type': 'application/a2a+json' },
          body: JSON.stringify({
            message: { messageId: `spend-${i}`, role: 'ROLE_USER', parts: [{ text: 'x' }] },
          }),
        });
        await response.text();
      }
      const refused = await runScript(file, 60_000);
      expect(refused.code).toBe(0);
      const asked = /^the agent asks for (\d+) ms, more than we have$/m.exec(refused.output);
      expect(asked, refused.output).not.toBeNull();
      expect(Number(asked?.[1])).toBeGreaterThan(30_000);
    } finally {
      agent.stop();
    }
  });
});
