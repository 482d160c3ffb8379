// Segue for VS Code: wires the server, views, documents and commands together.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Actions } from './actions';
import { BRIEF_SCHEME, BriefProvider, NOTE_SCHEME, NoteProvider, showRendered } from './documents';
import { explain, showError } from './errors';
import { locationsMarkdown } from './format';
import { Methods } from './protocol';
import { rowActions } from './picker';
import { onInterpreterChange, resolveLaunch } from './python';
import { filterSessions, searchSessions } from './search';
import { SegueServer } from './server';
import { BriefLens, HandoffStatus, registerBriefCommands, trackActiveBrief, TraceTree } from './surface';
import { SessionTree } from './tree';

/** What activate() returns: used by the extension-host tests, not a public API. */
export interface SegueApi {
  server: SegueServer;
  tree: SessionTree;
  briefs: BriefProvider;
  notes: NoteProvider;
  actions: Actions;
  handoffs: HandoffStatus;
  trace: TraceTree;
  lens: BriefLens;
  resolveLaunch: () => ReturnType<typeof resolveLaunch>;
  explain: typeof explain;
}

let current: SegueServer | undefined;

export function activate(context: vscode.ExtensionContext): SegueApi {
  const log = vscode.window.createOutputChannel('Segue', { log: true });
  const server = new SegueServer(context.extensionPath, log);
  current = server;
  const briefs = new BriefProvider(server);
  const notes = new NoteProvider();
  const tree = new SessionTree(server, context.workspaceState);
  const view = vscode.window.createTreeView('segue.sessions', { treeDataProvider: tree, showCollapseAll: true });
  tree.view = view;
  const actions = new Actions(server, tree, briefs);
  const traceTree = new TraceTree();
  const traceView = vscode.window.createTreeView('segue.trace', { treeDataProvider: traceTree });
  traceTree.view = traceView;
  actions.showTrace = async (r, t) => {
    await traceTree.show(r, t);
    await vscode.commands.executeCommand('segue.trace.focus');
  };
  const handoffs = new HandoffStatus(server, actions);
  rowActions.copy = (s) => actions.copyResumeCommand({ ref: `${s.runtime}:${s.id}`, runtime: s.runtime, title: s.title ?? undefined, session: s });
  const lens = new BriefLens(briefs);

  // Errors are shown by each action; commands never reject into VS Code's generic "command failed" toast.
  const command = (id: string, run: (...args: unknown[]) => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await run(...args);
      } catch (e) {
        await showError(e, log);
        return undefined;
      }
    });
  const withTarget = (title: string, run: (t: NonNullable<Awaited<ReturnType<Actions['target']>>>) => Promise<unknown>) =>
    async (arg: unknown) => {
      const t = await actions.target(arg, title);
      return t ? run(t) : undefined;
    };

  let interpreterWatch: vscode.Disposable | undefined;
  context.subscriptions.push(
    log,
    server,
    briefs,
    notes,
    tree,
    view,
    vscode.workspace.registerTextDocumentContentProvider(BRIEF_SCHEME, briefs),
    vscode.workspace.registerTextDocumentContentProvider(NOTE_SCHEME, notes),
    traceTree,
    traceView,
    handoffs,
    lens,
    vscode.languages.registerCodeLensProvider({ scheme: BRIEF_SCHEME }, lens),
    trackActiveBrief(briefs),
    ...registerBriefCommands(actions, briefs, command),
    server.onSessionsChanged(() => {
      // The view reloads in place (stable item ids keep what was expanded); open briefs are only marked
      // when their session grew, so the text being read does not change under the reader.
      tree.refresh();
      void tree.load().then((ss) => briefs.markGrown(ss), () => undefined);
    }),
    command('segue.listSessions', () => actions.listSessions()),
    command('segue.searchSessions', (q?: unknown) => searchSessions(server, actions, typeof q === 'string' ? q : undefined)),
    command('segue.filterSessions', (q?: unknown) => filterSessions(server, tree, typeof q === 'string' ? q : undefined)),
    command('segue.clearFilter', () => tree.setFilter(undefined)),
    command('segue.refresh', () => tree.refresh()),
    command('segue.toggleGrouping', async () => {
      const mode = await tree.toggleMode();
      vscode.window.setStatusBarMessage(`Segue: sessions grouped by ${mode}`, 3000);
      return mode;
    }),
    command('segue.openBrief', withTarget('Open the brief of', (t) => actions.openBrief(t))),
    // the Sessions view's rows (not contributed: the palette has Open Brief)
    command('segue.openBriefKeepFocus', withTarget('Open the brief of', (t) => actions.openBrief(t, true))),
    command('segue.resumeSession', withTarget('Resume', (t) => actions.resume(t))),
    command('segue.resumeInRuntime', withTarget('Resume in another runtime', (t) => actions.resumeInRuntime(t))),
    command('segue.emitToken', withTarget('Emit a handoff token for', (t) => actions.emitToken(t))),
    command('segue.claimToken', (token?: unknown) => actions.claimToken(typeof token === 'string' ? token : undefined)),
    command('segue.traceSession', withTarget('Trace', (t) => actions.trace(t))),
    command('segue.copyResumeCommand', withTarget('Copy the resume command of', (t) => actions.copyResumeCommand(t))),
    command('segue.showHandoffs', () => handoffs.show()),
    command('segue.openDemo', async () => {
      const r = await server.request(Methods.demo, {});
      await showRendered(notes.set('/demo/Segue sample.md', r.markdown));
    }),
    command('segue.showLocations', async () => {
      const r = await server.request(Methods.locations, {});
      await showRendered(notes.set('/where/Where Segue looked.md', locationsMarkdown(r.locations, os.homedir())));
    }),
    command('segue.showLog', () => log.show()),
    command('segue.restartServer', () => server.restart()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('segue.pythonPath') || e.affectsConfiguration('segue.home')) {
        log.info('settings changed: restarting the server');
        void server.restart();
      }
    }),
    server.onStarted((launch) => {
      // Follow the Python extension's interpreter only when it chose ours (and so is already active).
      if (!interpreterWatch && launch.source === 'python-extension') {
        void onInterpreterChange(() => void server.restart()).then((d) => {
          interpreterWatch = d;
          if (d) {
            context.subscriptions.push(d);
          }
        });
      }
    }),
  );

  // Refresh the view when it becomes visible after changes happened while hidden.
  context.subscriptions.push(
    view.onDidChangeVisibility((e) => {
      if (e.visible && !tree.sessions) {
        tree.refresh();
      }
    }),
  );

  writeTestMarker('activated', { version: vscode.version, extensionPath: context.extensionPath, path: process.env.PATH });
  // Which server code runs (the harness checks it is the checkout under test, not another install).
  server.onStarted((launch) => writeTestMarker('server', { segue: launch.segue, segueFile: launch.segueFile, python: launch.python }));
  return { server, tree, briefs, notes, actions, handoffs, trace: traceTree, lens, resolveLaunch: () => resolveLaunch(context.extensionPath), explain };
}

/** Let the server shut down cleanly (shutdown + exit) before the extension host goes away. */
export function deactivate(): Promise<void> | undefined {
  return current?.stop();
}

/** End-to-end tests see activation through a file; only when the harness sets the variable. */
function writeTestMarker(name: string, data: object): void {
  const dir = process.env.SEGUE_TEST_MARKER_DIR;
  if (!dir) {
    return;
  }
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, name), `${JSON.stringify(data)}\n`);
  } catch {
    // a test aid only
  }
}
