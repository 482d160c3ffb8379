// Which Python runs the server, and whether Segue is importable there (installed, or bundled in the vsix).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface Launch {
  python: string;
  source: InterpreterSource;
  /** Where `segue` was imported from: the interpreter's own site-packages, or the vsix's bundled/libs. */
  segue: 'installed' | 'bundled';
  /** The imported `segue/__init__.py`. */
  segueFile: string | undefined;
  version: string;
  env: NodeJS.ProcessEnv;
  segueHome: string | undefined;
}

export class LaunchError extends Error {
  constructor(
    message: string,
    readonly fix: string,
  ) {
    super(message);
  }
}

// Run with the extension directory as cwd: `python -m` puts cwd on sys.path, and a workspace holding a
// `segue/` folder must not shadow the real package.
const PROBE = [
  'import json, sys',
  'info = {"version": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable}',
  'if sys.version_info >= (3, 10):',
  '    try:',
  '        import segue, segue.lsp.server',
  '        info["segue"] = getattr(segue, "__file__", None)',
  '    except Exception as e:',
  '        info["error"] = "%s: %s" % (type(e).__name__, e)',
  'print(json.dumps(info))',
].join('\n');

interface ProbeResult {
  version?: string;
  executable?: string;
  segue?: string;
  error?: string;
  spawnError?: string;
}

export function probe(python: string, env: NodeJS.ProcessEnv, cwd: string): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE], { env, cwd, timeout: 20_000 }, (err, stdout, stderr) => {
      const last = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last) as ProbeResult);
      } catch {
        resolve({ spawnError: err ? err.message : `unexpected output: ${(stderr || stdout).slice(0, 300)}` });
      }
    });
  });
}

export function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p;
}

/** State dir shared with the CLI and terminals: the setting, else SEGUE_HOME, else Segue's own default. */
export function segueHome(): string | undefined {
  const setting = vscode.workspace.getConfiguration('segue').get<string>('home')?.trim();
  if (setting) {
    return path.resolve(expandHome(setting));
  }
  return process.env.SEGUE_HOME || undefined;
}

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
  resolveEnvironment(p: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

/** The Python extension is optional: use its API when it is installed, and never require it. */
async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<{ environments?: PythonEnvironmentsApi }>('ms-python.python');
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await withTimeout(ext.activate(), 15_000);
    return api?.environments;
  } catch {
    return undefined;
  }
}

function withTimeout<T>(p: Thenable<T>, ms: number): Promise<T | undefined> {
  return Promise.race([Promise.resolve(p), new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
}

export async function choosePython(): Promise<{ python: string; source: InterpreterSource }> {
  const setting = vscode.workspace.getConfiguration('segue').get<string>('pythonPath')?.trim();
  if (setting) {
    return { python: expandHome(setting), source: 'setting' };
  }
  const api = await pythonExtensionApi();
  if (api) {
    try {
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const env = await api.resolveEnvironment(api.getActiveEnvironmentPath(folder));
      const exe = env?.executable.uri?.fsPath;
      if (exe) {
        return { python: exe, source: 'python-extension' };
      }
    } catch {
      // fall through to PATH
    }
  }
  return { python: 'python3', source: 'path' };
}

export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.onDidChangeActiveEnvironmentPath?.(() => listener());
}

/** Installed Segue first (one install serves CLI and editor), then the copy bundled in the vsix. */
export async function resolveLaunch(extensionPath: string): Promise<Launch> {
  const { python, source } = await choosePython();
  const home = segueHome();
  const base: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: '1' };
  if (home) {
    base.SEGUE_HOME = home;
  }
  const installed = await probe(python, base, extensionPath);
  const where = source === 'setting' ? 'the segue.pythonPath setting' : source === 'python-extension' ? "the Python extension's interpreter" : 'PATH';
  if (installed.spawnError) {
    throw new LaunchError(
      `Segue could not run Python "${python}" (from ${where}): ${installed.spawnError}`,
      'Install Python 3.10 or newer, or set "segue.pythonPath" to its full path.',
    );
  }
  const version = installed.version ?? '?';
  if (!installed.error && installed.segue) {
    return { python, source, segue: 'installed', segueFile: installed.segue, version, env: base, segueHome: home };
  }
  if (!versionAtLeast(version, 3, 10)) {
    throw new LaunchError(
      `Segue needs Python 3.10 or newer; "${python}" (from ${where}) is ${version}.`,
      'Set "segue.pythonPath" to a Python 3.10+ interpreter.',
    );
  }
  const libs = path.join(extensionPath, 'bundled', 'libs');
  if (fs.existsSync(path.join(libs, 'segue'))) {
    const env = { ...base, PYTHONPATH: [libs, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };
    const bundled = await probe(python, env, extensionPath);
    if (!bundled.error && bundled.segue) {
      return { python, source, segue: 'bundled', segueFile: bundled.segue, version, env, segueHome: home };
    }
    throw new LaunchError(
      `Segue's bundled server does not load in "${python}" (Python ${version}): ${bundled.error ?? bundled.spawnError}`,
      `Install Segue into that interpreter ("${python}" -m pip install segue), or set "segue.pythonPath" to one that has it.`,
    );
  }
  throw new LaunchError(
    `Segue is not installed in "${python}" (Python ${version}, from ${where}) and this build of the extension bundles no server: ${installed.error ?? 'import failed'}`,
    `Run "${python}" -m pip install segue, or set "segue.pythonPath" to an interpreter where "python -m segue serve" works.`,
  );
}

export function versionAtLeast(version: string, major: number, minor: number): boolean {
  const [a, b] = version.split('.').map((x) => Number.parseInt(x, 10));
  return a > major || (a === major && b >= minor);
}
