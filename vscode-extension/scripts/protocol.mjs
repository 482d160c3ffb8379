// The wire contract: src/protocol.generated.ts (and package.json's runtime lists) are generated from
// server/segue/lsp/protocol.py and the runtime registry.
//   node scripts/protocol.mjs           regenerate it (npm run protocol)
//   node scripts/protocol.mjs --check   fail if it differs from what the Python contract gives (the build does this)
// Python: $SEGUE_PYTHON, else the project's .venv, else python3; always this checkout's server code (PYTHONPATH).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const EXT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = join(EXT, '..');
export const GENERATED = join(EXT, 'src', 'protocol.generated.ts');
export const MANIFEST = join(EXT, 'package.json'); // its runtime lists come from the registry too

function python() {
  if (process.env.SEGUE_PYTHON) return process.env.SEGUE_PYTHON;
  const venv = join(ROOT, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
  return existsSync(venv) ? venv : 'python3';
}

function run(py, args) {
  const env = { ...process.env, PYTHONPATH: [join(ROOT, 'server'), process.env.PYTHONPATH].filter(Boolean).join(delimiter) };
  return spawnSync(py, args, { cwd: ROOT, env, encoding: 'utf8' });
}

/**
 * Check (or, with write, regenerate) the generated contract. Returns true when it is current. A Python that cannot
 * run the generator is reported and not fatal here (tests/test_wire_contract.py checks the same); a stale file is.
 */
export function protocol({ write = false } = {}) {
  const py = python();
  const probe = run(py, ['-c', 'import segue.lsp.typescript']);
  if (probe.error || probe.status !== 0) {
    const why = probe.error ? probe.error.message : probe.stderr.trim().split('\n').at(-1);
    if (write) throw new Error(`cannot run the contract generator with ${py}: ${why}`);
    console.warn(`protocol: NOT CHECKED: ${py} cannot run segue.lsp.typescript (${why}); set SEGUE_PYTHON`);
    return false;
  }
  const r = run(py, ['-m', 'segue.lsp.typescript', write ? '--out' : '--check', GENERATED, '--manifest', MANIFEST]);
  if (r.status !== 0) {
    throw new Error(r.stderr.trim() || `the contract generator exited ${r.status}`);
  }
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const check = process.argv.includes('--check');
    protocol({ write: !check });
    console.log(check ? 'protocol: src/protocol.generated.ts is current' : 'protocol: wrote src/protocol.generated.ts');
  } catch (e) {
    console.error(`protocol: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
