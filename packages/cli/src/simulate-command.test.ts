/**
 * `a2a-ratelimit simulate`, in process: the seed's worked example through the command, 1,000
 * callers × 30 calls with a chart that must be well-formed SVG with one line per client kind in
 * each panel, the ordering of client kinds that the hold mechanism implies, the planned client
 * (reading the agent's card) never rejected, arrivals, config files, and the one-line errors.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cac } from 'cac';
import { afterAll, describe, expect, it } from 'vitest';
import {
  processSimulateIo,
  registerSimulateCommand,
  runSimulateCommand,
  type SimulateCommandOptions,
  type SimulateIo,
} from './simulate-command.js';
import type { OutcomeSummary, SimulationJson } from './simulation-report.js';
import type { ClientKind } from './simulation-summary.js';

const dir = mkdtempSync(join(tmpdir(), 'a2a-simulate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Captured {
  io: SimulateIo;
  stdout: string[];
  stderr: string[];
}

function capture(overrides: Partial<SimulateIo> = {}): Captured {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    io: {
      ...processSimulateIo(),
      stdout: (t) => stdout.push(t),
      stderr: (t) => stderr.push(t),
      ...overrides,
    },
    stdout,
    stderr,
  };
}

async function runJson(options: SimulateCommandOptions): Promise<SimulationJson> {
  const out = capture();
  const { exitCode } = await runSimulateCommand({ ...options, json: true }, out.io);
  expect(out.stderr.filter((l) => !l.startsWith('chart written'))).toEqual([]);
  expect(exitCode).toBe(0);
  const lines = out.stdout.join('').trimEnd().split('\n');
  return JSON.parse(lines.at(-1) ?? '') as SimulationJson;
}

function kindOf(json: SimulationJson, kind: ClientKind): OutcomeSummary {
  const outcome = json[kind];
  if (outcome === undefined) throw new Error(`no ${kind} in ${JSON.stringify(json)}`);
  return outcome;
}

/**
 * XML well-formedness (XML 1.0 §2.1 subset that SVG output uses): one root element, every start
 * tag closed in order, attributes `name="value"` without raw `<`, unique per element, text without
 * raw `<` and with only the five predefined or numeric entities, comments and CDATA terminated.
 * Returns the root element's name and the elements seen, or throws naming the first problem.
 */
function checkWellFormedXml(text: string): { root: string; elements: number } {
  const name = '[A-Za-z_:][-A-Za-z0-9_:.]*';
  const attribute = new RegExp(`^\\s+(${name})\\s*=\\s*(?:"([^"<]*)"|'([^'<]*)')`);
  const entity = /&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)/;
  const stack: string[] = [];
  let root: string | undefined;
  let elements = 0;
  let i = 0;
  const checkText = (chunk: string, at: number) => {
    if (entity.test(chunk)) throw new Error(`bad entity near offset ${at}`);
    if (stack.length === 0 && chunk.trim() !== '')
      throw new Error(`text outside the root at ${at}`);
  };
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      checkText(text.slice(i), i);
      break;
    }
    checkText(text.slice(i, lt), i);
    if (text.startsWith('<?', lt)) {
      const end = text.indexOf('?>', lt);
      if (end < 0 || stack.length > 0 || root !== undefined) throw new Error(`bad PI at ${lt}`);
      i = end + 2;
    } else if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt + 4);
      if (end < 0) throw new Error(`unterminated comment at ${lt}`);
      i = end + 3;
    } else if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt);
      if (end < 0 || stack.length === 0) throw new Error(`bad CDATA at ${lt}`);
      i = end + 3;
    } else if (text.startsWith('</', lt)) {
      const m = new RegExp(`^</(${name})\\s*>`).exec(text.slice(lt));
      if (m === null) throw new Error(`bad end tag at ${lt}`);
      const open = stack.pop();
      if (open !== m[1]) throw new Error(`</${m[1]}> closes <${open}> at ${lt}`);
      i = lt + m[0].length;
    } else {
      const m = new RegExp(`^<(${name})`).exec(text.slice(lt));
      if (m === null) throw new Error(`raw '<' at ${lt}`);
      const tag = m[1] as string;
      if (stack.length === 0) {
        if (root !== undefined) throw new Error(`second root <${tag}> at ${lt}`);
        root = tag;
      }
      elements++;
      let rest = text.slice(lt + m[0].length);
      let consumed = lt + m[0].length;
      const seen = new Set<string>();
      for (let a = attribute.exec(rest); a !== null; a = attribute.exec(rest)) {
        const attr = a[1] as string;
        if (seen.has(attr)) throw new Error(`duplicate attribute ${attr} on <${tag}> at ${lt}`);
        seen.add(attr);
        if (entity.test(a[2] ?? a[3] ?? '')) throw new Error(`bad entity in ${attr} at ${lt}`);
        rest = rest.slice(a[0].length);
        consumed += a[0].length;
      }
      const close = /^\s*(\/?)>/.exec(rest);
      if (close === null) throw new Error(`malformed start tag <${tag}> at ${lt}`);
      if (close[1] !== '/') stack.push(tag);
      i = consumed + close[0].length;
    }
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('> <')}>`);
  if (root === undefined) throw new Error('no root element');
  return { root, elements };
}

describe('checkWellFormedXml (the test oracle itself)', () => {
  it('accepts well-formed markup and rejects each kind of breakage', () => {
    expect(
      checkWellFormedXml('<svg a="1"><g><path d="M0 0"/></g><text>a &amp; b</text></svg>'),
    ).toEqual({ root: 'svg', elements: 4 });
    for (const bad of [
      '<svg><g></svg>',
      '<svg></svg><svg></svg>',
      '<svg a="1" a="2"></svg>',
      '<svg><text>a & b</text></svg>',
      '<svg><text>a < b</text></svg>',
      '<svg a=1></svg>',
      '<svg>',
      'text<svg></svg>',
    ]) {
      expect(() => checkWellFormedXml(bad), bad).toThrow();
    }
  });
});

describe('simulate: the worked example', () => {
  it('ours 10 at once / 20 on first retry / 0 abandoned / 50 requests; naive ≥ 20 rejected retries, ≥ 1 abandoned; planned 10 at once, 20 paced, 30 requests', async () => {
    const json = await runJson({ clients: 'ours,naive,planned' });
    const ours = kindOf(json, 'ours');
    const naive = kindOf(json, 'naive');
    const planned = kindOf(json, 'planned');
    console.log('[simulate worked example]', { ours, naive, planned });
    expect(planned).toMatchObject({
      calls: 30,
      admittedAtOnce: 10,
      admittedPaced: 20,
      rejected: 0,
      rejectedRetries: 0,
      abandoned: 0,
      heldByClient: 20,
      requestsSeenByAgent: 30,
    });
    expect(planned.totalSeconds).toBeLessThanOrEqual(20.01);
    expect(ours).toMatchObject({
      calls: 30,
      admittedAtOnce: 10,
      admittedPaced: 0,
      rejected: 20,
      admittedOnFirstRetry: 20,
      admittedOnLaterRetry: 0,
      laterRetries: 0,
      rejectedRetries: 0,
      abandoned: 0,
      firstRetrySuccessRate: 1,
      requestsSeenByAgent: 50,
    });
    expect(ours.totalSeconds).toBeGreaterThanOrEqual(20);
    expect(ours.totalSeconds).toBeLessThanOrEqual(21);
    expect(naive.rejectedRetries).toBeGreaterThanOrEqual(20);
    expect(naive.abandoned).toBeGreaterThanOrEqual(1);
    expect(naive.admittedAtOnce + naive.admittedOnFirstRetry + naive.admittedOnLaterRetry).toBe(
      30 - naive.abandoned,
    );
    expect(json.scenario).toMatchObject({ callers: 1, callsPerCaller: 30, method: 'SendMessage' });
  });

  it('prints a table with one column per client kind', async () => {
    const out = capture();
    const { exitCode } = await runSimulateCommand({ clients: 'ours,give-up-early' }, out.io);
    expect(exitCode).toBe(0);
    const text = out.stdout.join('');
    const header = text.split('\n').find((l) => l.includes('ours'));
    expect(header?.trim().split(/\s+/)).toEqual(['ours', 'give-up-early']);
    expect(text).toMatch(/^admitted at once\s+10\s+10$/m);
    expect(text).toMatch(/^admitted on first retry\s+20\s+1$/m);
    expect(text).toMatch(/^abandoned\s+0\s+19$/m);
    expect(text).toMatch(/^requests the agent saw\s+50\s+50$/m);
  });

  it('orders the client kinds as the holds imply', async () => {
    const json = await runJson({});
    const [ours, naive, fixed, ignoring, early] = (
      ['ours', 'naive', 'fixed', 'hint-ignoring', 'give-up-early'] as const
    ).map((k) => kindOf(json, k)) as [
      OutcomeSummary,
      OutcomeSummary,
      OutcomeSummary,
      OutcomeSummary,
      OutcomeSummary,
    ];
    // The 20 rejected calls hold slots at 1, 2, …, 20 s with a 3 s grace. A client that ignores
    // the delay only gets in when one of its own retries lands inside its call's slot: the fixed
    // client (1 s × 4) reaches slots 1–4, the hint-ignoring one (0, then every 250 ms, 10 retries,
    // so up to 2.25 s) slots 1–2, the give-up-early one (one retry at 1 s) slot 1.
    expect(fixed.admittedOnFirstRetry + fixed.admittedOnLaterRetry).toBe(4);
    expect(ignoring.admittedOnFirstRetry + ignoring.admittedOnLaterRetry).toBe(2);
    expect(early.admittedOnFirstRetry + early.admittedOnLaterRetry).toBe(1);
    expect(ours.abandoned).toBe(0);
    for (const other of [naive, fixed, ignoring, early]) {
      expect(other.abandoned).toBeGreaterThan(0);
      expect(other.requestsSeenByAgent).toBeGreaterThanOrEqual(ours.requestsSeenByAgent);
      expect(other.firstRetrySuccessRate).toBeLessThan(ours.firstRetrySuccessRate);
    }
    expect(early.abandoned).toBeGreaterThan(ignoring.abandoned);
    expect(ignoring.abandoned).toBeGreaterThan(fixed.abandoned);
    // Retrying at once and every 250 ms sends more requests than any other kind.
    for (const other of [ours, naive, fixed, early]) {
      expect(ignoring.requestsSeenByAgent).toBeGreaterThan(2 * other.requestsSeenByAgent - 1);
    }
    // Giving up after one retry costs no extra requests — it just loses the calls.
    expect(early.requestsSeenByAgent).toBe(50);
  });

  it('is reproducible from its seed', async () => {
    const a = await runJson({ clients: 'ours,naive', seed: 7 });
    const b = await runJson({ clients: 'ours,naive', seed: '7' });
    expect({ ...a, wallMs: 0 }).toEqual({ ...b, wallMs: 0 });
  });
});

describe('simulate at 1,000 callers × 30 calls', () => {
  it('obedient clients are admitted on their first retry every time; the chart is well-formed SVG with every kind', async () => {
    const chart = join(dir, 'simulation.svg');
    const started = performance.now();
    const json = await runJson({
      callers: 1000,
      calls: 30,
      clients: 'ours,naive,give-up-early',
      chart,
    });
    const totalMs = performance.now() - started;
    const ours = kindOf(json, 'ours');
    console.log(
      `[simulate 1000×30] simulation ${json.wallMs} ms (3 kinds, ${
        kindOf(json, 'ours').requestsSeenByAgent +
        kindOf(json, 'naive').requestsSeenByAgent +
        kindOf(json, 'give-up-early').requestsSeenByAgent
      } requests), with chart ${Math.round(totalMs)} ms`,
      { ours },
    );
    expect(ours).toMatchObject({
      calls: 30_000,
      admittedAtOnce: 10_000,
      rejected: 20_000,
      admittedOnFirstRetry: 20_000,
      admittedOnLaterRetry: 0,
      laterRetries: 0,
      rejectedRetries: 0,
      abandoned: 0,
      firstRetrySuccessRate: 1,
      requestsSeenByAgent: 50_000,
    });
    expect(ours.totalSeconds).toBeLessThanOrEqual(21);
    expect(kindOf(json, 'naive').abandoned).toBeGreaterThan(1000);
    // "In seconds": generous for a loaded CI machine; the figure is logged above.
    expect(json.wallMs).toBeLessThan(60_000);

    const svg = readFileSync(chart, 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(checkWellFormedXml(svg).root).toBe('svg');
    // One legend entry per client kind, named…
    const legend = svg.match(/ecmeta_ssr_type="legend"/g) ?? [];
    expect(legend).toHaveLength(3);
    for (const kind of ['ours', 'naive', 'give-up-early']) expect(svg).toContain(`>${kind}</text>`);
    // …and one line per kind in each panel it has points in (admissions, rejections, abandoned
    // calls), each in the kind's colour, dash and width: the widest drawn first, so where two
    // lines coincide the later, narrower one leaves the earlier one's edges showing.
    const lines = [
      ...svg.matchAll(
        /<path d="M[^"]+" fill="none"[^>]*stroke="(#[0-9a-f]{6})" stroke-width="([\d.]+)"([^>]*)/g,
      ),
    ];
    const styles = new Map<string, { count: number; width: string; dash: string }>();
    for (const [, colour, width, rest] of lines) {
      const dash = /stroke-dasharray="([^"]*)"/.exec(rest ?? '')?.[1] ?? 'solid';
      const seen = styles.get(colour as string);
      styles.set(colour as string, { count: (seen?.count ?? 0) + 1, width: width as string, dash });
    }
    const [ourColour, naiveColour, giveUpColour] = ['#2e7d32', '#c62828', '#1565c0'];
    expect(styles.get(ourColour as string)?.count).toBe(2); // nothing abandoned
    expect(styles.get(naiveColour as string)?.count).toBe(3); // > 1000 abandoned: a third line
    expect(styles.get(giveUpColour as string)?.count).toBeGreaterThanOrEqual(2);
    const all = [...styles.values()];
    expect(new Set(all.map((s) => s.width)).size).toBe(3);
    expect(new Set(all.map((s) => s.dash)).size).toBe(3);
    expect(svg).toContain('abandoned / s (log)');
  });
});

describe('simulate --callers 1000 --calls 30 --clients ours,planned,naive', () => {
  it('planned sends 30,000 requests and none is rejected; the chart draws it with the others', async () => {
    const chart = join(dir, 'planned.svg');
    const json = await runJson({ callers: 1000, calls: 30, clients: 'ours,planned,naive', chart });
    const [ours, planned, naive] = (['ours', 'planned', 'naive'] as const).map((k) =>
      kindOf(json, k),
    ) as [OutcomeSummary, OutcomeSummary, OutcomeSummary];
    console.log('[simulate 1000×30, ours/planned/naive]', { ours, planned, naive });
    expect(planned).toMatchObject({
      calls: 30_000,
      admittedAtOnce: 10_000,
      admittedPaced: 20_000,
      rejected: 0,
      rejectedRetries: 0,
      abandoned: 0,
      requestsSeenByAgent: 30_000,
    });
    expect(planned.totalSeconds).toBeLessThanOrEqual(ours.totalSeconds);
    expect(ours.requestsSeenByAgent).toBe(50_000);
    expect(naive.requestsSeenByAgent).toBeGreaterThan(50_000);
    const svg = readFileSync(chart, 'utf8');
    expect(checkWellFormedXml(svg).root).toBe('svg');
    for (const kind of ['ours', 'planned', 'naive']) expect(svg).toContain(`>${kind}</text>`);
    const colours = [
      ...svg.matchAll(
        /<path d="M[^"]+" fill="none"[^>]*stroke="(#[0-9a-f]{6})" stroke-width="[\d.]+"/g,
      ),
    ].map((m) => m[1]);
    // Planned (teal) has an admissions line and, never rejected nor abandoned, no other line.
    expect(colours.filter((c) => c === '#00838f')).toHaveLength(1);
  });
});

describe('simulate: arrivals, policies and errors', () => {
  it('Poisson arrivals: ours paces from RateLimit on successes and is never rejected, nor is planned; the others are', async () => {
    const json = await runJson({
      callers: 50,
      calls: 40,
      arrival: 'poisson:3',
      clients: 'ours,naive,hint-ignoring,planned',
      seed: 3,
    });
    const ours = kindOf(json, 'ours');
    // 3 calls/s against 1/s with a burst of 10: our gate holds calls back at the announced pace.
    expect(ours).toMatchObject({ calls: 2000, rejected: 0, abandoned: 0 });
    expect(ours.admittedAtOnce + ours.admittedPaced).toBe(2000);
    expect(ours.heldByClient).toBeGreaterThan(1000);
    expect(ours.admittedPaced).toBe(ours.heldByClient);
    const planned = kindOf(json, 'planned');
    expect(planned).toMatchObject({ calls: 2000, rejected: 0, abandoned: 0 });
    expect(planned.requestsSeenByAgent).toBe(2000);
    // Planning from the card holds calls only when they would not conform: never later than ours.
    expect(planned.waitP99Seconds).toBeLessThanOrEqual(ours.waitP99Seconds);
    for (const kind of ['naive', 'hint-ignoring'] as const) {
      const other = kindOf(json, kind);
      expect(other.heldByClient).toBe(0);
      expect(other.rejected).toBeGreaterThan(1000);
      expect(other.abandoned).toBeGreaterThan(0);
      expect(other.requestsSeenByAgent).toBeGreaterThan(ours.requestsSeenByAgent);
    }
    expect(kindOf(json, 'hint-ignoring').requestsSeenByAgent).toBeGreaterThan(
      kindOf(json, 'naive').requestsSeenByAgent,
    );
    expect(json.scenario.arrival).toEqual({ kind: 'poisson', perSecond: 3 });
  });

  it('uniform arrivals over 600 s (30 calls per caller, well under 60/min): nobody is rejected', async () => {
    const json = await runJson({ callers: 20, calls: 30, arrival: 'uniform:600', clients: 'ours' });
    expect(kindOf(json, 'ours')).toMatchObject({
      admittedAtOnce: 600,
      rejected: 0,
      abandoned: 0,
    });
  });

  it('reads a YAML policy set: a shared agent-wide limit makes no holds, so retries can be rejected', async () => {
    const file = join(dir, 'policies.yaml');
    writeFileSync(
      file,
      [
        'policies:',
        '  - { name: per-caller, kind: rate, scope: caller, methods: [SendMessage], limit: 60, windowSeconds: 60, burst: 10 }',
        '  - { name: agent-wide, kind: rate, scope: agent, limit: 20, windowSeconds: 1, burst: 20 }',
      ].join('\n'),
    );
    const json = await runJson({ config: file, callers: 10, calls: 10, clients: 'ours' });
    expect(json.scenario.policies.map((p) => p.name)).toEqual(['per-caller', 'agent-wide']);
    const ours = kindOf(json, 'ours');
    expect(ours.calls).toBe(100);
    expect(ours.admittedAtOnce).toBe(20);
    expect(ours.abandoned).toBe(0);
  });

  it('bad flags and files get one line naming the problem and exit code 2', async () => {
    const cases: [SimulateCommandOptions, RegExp][] = [
      [{ callers: 0 }, /--callers must be a positive number, got "0"/],
      [{ calls: 'many' }, /--calls must be a positive number/],
      [{ callers: 1.5 }, /--callers must be a positive integer/],
      [{ seed: -1 }, /--seed must be an integer from 0/],
      [{ arrival: 'gaussian:3' }, /--arrival must be burst, uniform:<seconds> or poisson/],
      [{ arrival: 'poisson:-1' }, /poisson:<calls per second> must be a positive number/],
      [{ arrival: 'uniform' }, /--arrival must be burst/],
      [{ clients: 'ours,psychic' }, /unknown client kind "psychic"/],
      [{ method: 'Frobnicate' }, /--method must be an A2A method/],
      [
        { config: join(dir, 'missing.yaml') },
        /cannot read config file .*missing\.yaml: no such file/,
      ],
      [{ windowSeconds: 0 }, /--window-seconds must be a positive number/],
      [{ chart: true }, /--chart needs a value/],
    ];
    for (const [options, message] of cases) {
      const out = capture();
      const { exitCode, report } = await runSimulateCommand(options, out.io);
      expect(exitCode, JSON.stringify(options)).toBe(2);
      expect(report).toBeUndefined();
      expect(out.stderr).toHaveLength(1);
      expect(out.stderr[0]).toMatch(message);
      expect(out.stderr[0]).toMatch(/^a2a-ratelimit: [^\n]+\n$/);
    }
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        policies: [{ name: 'r', kind: 'rate', limit: 5, windowSeconds: 60, burst: 0 }],
      }),
    );
    const out = capture();
    expect((await runSimulateCommand({ config: bad }, out.io)).exitCode).toBe(2);
    expect(out.stderr[0]).toMatch(/bad\.json: policies\[0\]\.burst: must be a positive integer/);
    writeFileSync(
      bad,
      JSON.stringify({ policies: [{ name: 'r', kind: 'rate', limt: 5, windowSeconds: 60 }] }),
    );
    const typo = capture();
    expect((await runSimulateCommand({ config: bad }, typo.io)).exitCode).toBe(2);
    // Every problem at once: the missing field and the unknown one.
    expect(typo.stderr[0]).toMatch(
      /bad\.json: 2 problems: policies\[0\]\.limit: is required; policies\[0\]: unknown field "limt"/,
    );
  });

  it('without echarts: says to install it and draws nothing, before simulating', async () => {
    const chart = join(dir, 'never.svg');
    const out = capture({
      importModule: () =>
        Promise.reject(
          Object.assign(new Error("Cannot find package 'echarts'"), {
            code: 'ERR_MODULE_NOT_FOUND',
          }),
        ),
    });
    const { exitCode, report } = await runSimulateCommand({ chart }, out.io);
    expect(exitCode).toBe(2);
    expect(report).toBeUndefined();
    expect(out.stderr.join('')).toContain('install echarts to draw charts');
    expect(existsSync(chart)).toBe(false);
  });

  it('registers with cac: kebab-case flags reach the command', async () => {
    const cli = cac('a2a-ratelimit');
    registerSimulateCommand(cli);
    cli.parse(
      [
        'node',
        'a2a-ratelimit',
        'simulate',
        '--callers',
        '3',
        '--calls',
        '12',
        '--clients',
        'fixed',
        '--fixed-delay-ms',
        '2000',
        '--window-seconds',
        '30',
        '--json',
      ],
      { run: false },
    );
    expect(cli.matchedCommandName).toBe('simulate');
    const json = await runJson(cli.options as SimulateCommandOptions);
    expect(json.scenario).toMatchObject({ callers: 3, callsPerCaller: 12 });
    expect(json.scenario.policies[0]).toMatchObject({ windowSeconds: 30 });
    // 10 at once, 2 rejected per caller; the fixed client retries after 2 s: slots are 0.5 s and
    // 1 s (60 per 30 s) with a 3 s grace, so both retries at 2 s claim their holds.
    expect(kindOf(json, 'fixed')).toMatchObject({
      calls: 36,
      admittedAtOnce: 30,
      admittedOnFirstRetry: 6,
    });
  });

  const main = resolve(import.meta.dirname, './main.ts');
  it.skipIf(!existsSync(main))(
    'runs through the real binary entry (packages/cli/src/main.ts)',
    () => {
      const out = execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--conditions=a2a-ratelimit-source',
          main,
          'simulate',
          '--clients',
          'ours',
          '--json',
        ],
        {
          cwd: resolve(import.meta.dirname, '../../..'),
          encoding: 'utf8',
        },
      );
      const json = JSON.parse(out.trimEnd().split('\n').at(-1) ?? '') as SimulationJson;
      expect(kindOf(json, 'ours')).toMatchObject({
        admittedAtOnce: 10,
        admittedOnFirstRetry: 20,
        abandoned: 0,
        requestsSeenByAgent: 50,
      });
    },
  );
});
