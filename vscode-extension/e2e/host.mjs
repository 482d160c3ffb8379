// Style B: mocha inside code-server's real extension host (smoke-test driver + payload), against the real
// Segue server on the fixture stores. Usage: node e2e/host.mjs. Prints "e2e-host: N passed, M failed".
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { format } from 'node:util';
import { EXT, keepEvidence, launchBrowser, PYTHON, prepareRun, sleep, startCodeServer, writeSettings } from './lib.mjs';

const t0 = Date.now();
const r = prepareRun('host');
let server;
let browser;
let code = 3; // 3 = the harness timed out / never got an exit code
const lines = [];

/** A Python 3.10+ that cannot import segue, to prove the bundled fallback (null if the machine has none). */
function plainPython() {
  for (const p of ['/usr/bin/python3', '/usr/local/bin/python3']) {
    try {
      const out = execFileSync(p, ['-c', 'import sys, importlib.util as u; print(sys.version_info >= (3, 10) and u.find_spec("segue") is None)'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
      if (out.trim() === 'True') return p;
    } catch {}
  }
  return null;
}

try {
  if (!r.fixtures.length) throw new Error('no fixture stores under tests/fixtures/real/<runtime>/');
  if (!fs.existsSync(path.join(EXT, 'out/test/suite/index.js'))) throw new Error('tests not compiled: npm run compile-tests');
  if (!fs.existsSync(path.join(EXT, 'dist/extension.js'))) throw new Error('extension not built: npm run build');
  const ctxFile = path.join(r.run, 'context.json');
  fs.writeFileSync(ctxFile, JSON.stringify({
    python: PYTHON,
    plainPython: plainPython(),
    out: r.dirs.out,
    fixtures: r.fixtures.map((f) => ({ runtime: f.runtime, sessions: f.expected.sessions ?? [] })),
  }, null, 2));
  r.env.SEGUE_TEST_CONTEXT = ctxFile;
  writeSettings(r);
  server = await startCodeServer(r, ['--vscode-option', 'enable-smoke-test-driver']);
  browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const exited = new Promise((resolve) => page.exposeFunction('codeAutomationExit', resolve));
  page.on('console', async (m) => {
    // Extension-host output arrives as ('%c INFO', 'color: …', fmt, ...args).
    const args = await Promise.all(m.args().map((a) => a.jsonValue().catch(() => '?')));
    if (typeof args[0] === 'string' && args[0].includes('%c') && args.length > 2) {
      const s = format(...args.slice(2));
      if (/open-vsx|ENOTFOUND|Dialog requested during smoke test|Could not find pty/.test(s)) return;
      lines.push(s);
      console.log(`    ${s}`);
    }
  });
  page.on('pageerror', (e) => fs.appendFileSync(path.join(r.run, 'page.log'), `[pageerror] ${e.message}\n`));
  const remote = (p) => `vscode-remote://127.0.0.1:${server.port}${p}`;
  const payload = [['extensionDevelopmentPath', remote(EXT)], ['extensionTestsPath', remote(path.join(EXT, 'out/test/suite/index.js'))]];
  await page.goto(`${server.base}/?folder=${encodeURIComponent(r.dirs.ws)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  code = await Promise.race([exited, sleep(150_000).then(() => 3)]);
  await page.screenshot({ path: path.join(r.dirs.shots, 'host-final.png') }).catch(() => undefined);
} catch (e) {
  console.log(`  ✘ harness: ${e?.stack ?? e}`);
} finally {
  await browser?.close().catch(() => undefined);
  await server?.stop();
}

const resultsFile = path.join(r.dirs.marker, 'host-results.json');
const results = fs.existsSync(resultsFile) ? JSON.parse(fs.readFileSync(resultsFile, 'utf8')) : { passed: [], failed: [] };
fs.writeFileSync(path.join(r.run, 'results.json'), JSON.stringify({ exitCode: code, ...results }, null, 2));
let failed = results.failed.length;
if (code !== 0 && failed === 0) failed = 1; // no per-test failure recorded, but the run did not succeed
const dest = keepEvidence(r, code === 0 && failed === 0);
console.log(`  exit code ${code}; evidence: ${path.relative(process.cwd(), dest)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
console.log(`e2e-host: ${results.passed.length} passed, ${failed} failed`);
process.exit(code === 0 && failed === 0 ? 0 : 1);
