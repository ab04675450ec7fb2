// The public API reports: one `api/<entry>.api.md` per package.json export, made by
// @microsoft/api-extractor from the built declarations (dist/**/*.d.ts, run `npm run build:lib`
// first). `node api/api-report.mjs` fails when a report differs from what the code exports (part of
// `npm test`); `--update` rewrites the reports (`npm run api:update`).
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = resolve(import.meta.dirname, '..');
const update = process.argv.includes('--update');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const temp = join(tmpdir(), `a2a-ratelimit-api-${process.pid}`);

/** Each subpath export and the report it gets: `.` → index, `./server/express` → server-express. */
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === 'object')
  .map(([subpath, target]) => ({
    subpath,
    types: join(root, target.types),
    report: subpath === '.' ? 'index' : subpath.slice(2).replaceAll('/', '-'),
  }));

/** Cross-entry references and doc links are the TypeDoc check's job (`npm run docs:check`). */
const quiet = { logLevel: 'none', addToApiReportFile: false };

function configOf(entry) {
  return ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: entry.types,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            skipLibCheck: true,
            types: ['node'],
          },
          files: entries.map((e) => e.types),
        },
      },
      apiReport: {
        enabled: true,
        reportFileName: entry.report,
        reportFolder: join(root, 'api'),
        reportTempFolder: temp,
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: 'warning' } },
        extractorMessageReporting: {
          default: { logLevel: 'warning', addToApiReportFile: true },
          'ae-missing-release-tag': quiet,
          'ae-forgotten-export': quiet,
          'ae-unresolved-link': quiet,
          'ae-undocumented': quiet,
        },
        tsdocMessageReporting: { default: quiet },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: join(root, 'package.json'),
  });
}

/** Shows what changed (`diff -u` exits 1 when the files differ). */
function printDiff(expected, actual) {
  try {
    execFileSync('diff', ['-u', expected, actual], { stdio: 'inherit' });
  } catch {
    // A difference, already printed.
  }
}

const HANDLED = new Set([
  'console-preamble',
  'console-api-report-changed',
  'console-api-report-copied',
  'console-api-report-created',
  'console-api-report-not-copied',
]);

const configs = entries.map((entry) => ({ entry, config: configOf(entry) }));
const first = configs[0];
if (first === undefined) throw new Error('package.json has no exports');
// One TypeScript program for all entries (the first config's, with the others added).
const compilerState = CompilerState.create(first.config, {
  additionalEntryPoints: entries.map((e) => e.types),
});
const changed = [];
let failed = false;
try {
  for (const { entry, config } of configs) {
    const result = Extractor.invoke(config, {
      localBuild: update,
      compilerState,
      messageCallback: (message) => {
        // Its preamble and its advice on copying reports are replaced by our one line below.
        if (HANDLED.has(message.messageId)) message.handled = true;
      },
    });
    if (result.apiReportChanged) {
      changed.push(`api/${entry.report}.api.md (${entry.subpath})`);
      const file = `${entry.report}.api.md`;
      if (!update) printDiff(join(root, 'api', file), join(temp, file));
    }
    if (!result.succeeded && !result.apiReportChanged) failed = true;
  }
} finally {
  rmSync(temp, { recursive: true, force: true });
}
if (changed.length > 0 && !update) {
  console.error(
    `The public API changed: ${changed.join(', ')}.\n` +
      'If that is intended, run `npm run api:update` and commit the reports with the change.',
  );
  process.exit(1);
}
if (failed) process.exit(1);
console.log(
  update && changed.length > 0
    ? `updated: ${changed.join(', ')}`
    : `API reports match (${entries.length} entries)`,
);
