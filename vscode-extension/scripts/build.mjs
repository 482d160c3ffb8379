// Bundle the extension with esbuild (vscode stays external; everything else, languageclient included, is inlined).
// First: the generated wire contract must match server/segue/lsp/protocol.py (no network, only the local Python).
import * as esbuild from 'esbuild';
import { protocol } from './protocol.mjs';

try {
  protocol();
} catch (e) {
  console.error(`build: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

const production = process.argv.includes('--production');
await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});
