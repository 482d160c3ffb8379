// "Segue: List Sessions": a quick pick over all runtimes, newest first, with runtime and folder filters.
import * as os from 'node:os';
import * as vscode from 'vscode';
import { age, type ClearPick, escapeIcons, runtimeIcon, runtimeName, sessionTitle, tildePath, visiblePicks } from './format';
import { Methods, type Runtime, RUNTIMES, type Session } from './protocol';
import { PROGRESS_DELAY_MS, type SegueServer } from './server';
import { showError } from './errors';

export interface PickState {
  runtimes: Runtime[]; // empty = all
  folderOnly: boolean;
}

interface SessionPick extends vscode.QuickPickItem {
  session: Session;
}
type Pick = SessionPick | ClearPick;

const COPY_TOOLTIP = 'Copy Resume Command';
/** Set by the extension: what the copy button on a row does (copy the session's resume command line). */
export const rowActions: { copy?: (s: Session) => Promise<unknown> } = {};

/** The folder "current workspace folder" means: the active editor's folder, else the first one. */
export function currentFolder(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
}

export function toPick(s: Session, now: number): SessionPick {
  const desc = [runtimeName(s.runtime), s.branch, age(s.updated_at ?? s.started_at, now)].filter(Boolean);
  const flags = [s.live ? '$(pulse) live' : '', s.handed_off ? '$(arrow-swap) handed off' : ''].filter(Boolean);
  return {
    label: `$(${runtimeIcon(s.runtime)}) ${escapeIcons(sessionTitle(s, 100))}`,
    description: escapeIcons(desc.join(' · ')) + (flags.length ? `  ${flags.join('  ')}` : ''),
    // The id tells apart sessions with the same title and directory, and can be typed to filter.
    detail: [
      escapeIcons(tildePath(s.cwd, os.homedir()) || 'unknown directory'),
      s.subagent_count ? `${s.subagent_count} subagent${s.subagent_count === 1 ? '' : 's'}` : '',
      escapeIcons(s.id),
    ]
      .filter(Boolean)
      .join(' · '),
    buttons: [{ iconPath: new vscode.ThemeIcon('copy'), tooltip: COPY_TOOLTIP }],
    alwaysShow: true, // filtered by `visiblePicks` (words in any order), not by the quick pick
    session: s,
  };
}

const FILTER_RUNTIME = 'Filter by runtime';
const FOLDER_ON = 'Show all directories';
const FOLDER_OFF = 'Only sessions in the current workspace folder';

type Outcome = { kind: 'picked'; session: Session } | { kind: 'runtime' } | { kind: 'cancel' };


function once(server: SegueServer, title: string, state: PickState): Promise<Outcome> {
  const qp = vscode.window.createQuickPick<Pick>();
  const folder = currentFolder();
  let all: SessionPick[] = [];
  const scopeText = () =>
    [state.runtimes.length ? state.runtimes.map(runtimeName).join(', ') : '', state.folderOnly && folder ? tildePath(folder, os.homedir()) : '']
      .filter(Boolean)
      .join(' · ') || undefined;
  const show = () => {
    qp.items = visiblePicks(all, qp.value, scopeText());
  };
  const placeholder = 'Type to filter by title, runtime, branch or directory';
  qp.placeholder = placeholder;
  const runtimeButton = (): vscode.QuickInputButton => ({
    iconPath: new vscode.ThemeIcon(state.runtimes.length ? 'filter-filled' : 'filter'),
    tooltip: FILTER_RUNTIME,
  });
  const folderButton = (): vscode.QuickInputButton => ({
    iconPath: new vscode.ThemeIcon(state.folderOnly ? 'root-folder-opened' : 'root-folder'),
    tooltip: state.folderOnly ? FOLDER_ON : FOLDER_OFF,
  });
  const setButtons = () => {
    qp.buttons = folder ? [runtimeButton(), folderButton()] : [runtimeButton()];
    const scope = [
      state.runtimes.length ? state.runtimes.map(runtimeName).join(', ') : 'all runtimes',
      state.folderOnly && folder ? tildePath(folder, os.homedir()) : '',
    ].filter(Boolean);
    qp.title = `${title} (${scope.join(' · ')})`;
  };
  let generation = 0;
  const load = async () => {
    const mine = ++generation;
    const started = Date.now();
    qp.busy = true;
    try {
      const params = {
        runtime: state.runtimes.length ? state.runtimes : undefined,
        dir: state.folderOnly && folder ? folder : undefined,
        limit: 500,
      };
      const r = await server.request(Methods.listSessions, params, undefined, (p) => {
        if (mine === generation && p.message && Date.now() - started >= PROGRESS_DELAY_MS) {
          qp.placeholder = `${p.message.charAt(0).toUpperCase()}${p.message.slice(1)}…`; // a cold scan's progress
        }
      });
      if (mine !== generation) {
        return;
      }
      qp.placeholder = placeholder;
      const now = Date.now();
      all = r.sessions.map((s) => toPick(s, now));
      show();
      if (r.sessions.length === 0) {
        qp.placeholder = scopeText() ? 'No sessions match these filters.' : 'No sessions found.';
      }
    } catch (e) {
      qp.hide();
      void showError(e, server.log);
    } finally {
      if (mine === generation) {
        qp.busy = false;
      }
    }
  };
  return new Promise<Outcome>((resolve) => {
    let outcome: Outcome = { kind: 'cancel' };
    qp.onDidTriggerButton((b) => {
      if (b.tooltip === FILTER_RUNTIME) {
        outcome = { kind: 'runtime' };
        qp.hide();
        return;
      }
      state.folderOnly = !state.folderOnly;
      setButtons();
      void load();
    });
    qp.onDidTriggerItemButton((e) => {
      if (e.button.tooltip === COPY_TOOLTIP && rowActions.copy && 'session' in e.item) {
        void rowActions.copy(e.item.session);
      }
    });
    qp.onDidChangeValue(show);
    qp.onDidAccept(() => {
      const chosen = qp.selectedItems[0];
      if (chosen && 'clear' in chosen) {
        state.runtimes = [];
        state.folderOnly = false;
        setButtons();
        void load();
        return;
      }
      if (chosen) {
        outcome = { kind: 'picked', session: chosen.session };
        qp.hide();
      }
    });
    qp.onDidHide(() => {
      qp.dispose();
      resolve(outcome);
    });
    setButtons();
    qp.show();
    void load();
  });
}

/** Pick one session; the runtime filter is a nested multi-select, after which the list reopens. */
export async function pickSession(server: SegueServer, title: string, state: PickState): Promise<Session | undefined> {
  for (;;) {
    const r = await once(server, title, state);
    if (r.kind === 'picked') {
      return r.session;
    }
    if (r.kind === 'cancel') {
      return undefined;
    }
    const chosen = await vscode.window.showQuickPick(
      RUNTIMES.map((rt) => ({
        label: `$(${runtimeIcon(rt)}) ${runtimeName(rt)}`,
        runtime: rt,
        picked: state.runtimes.length === 0 || state.runtimes.includes(rt),
      })),
      { canPickMany: true, title: 'Show sessions of' },
    );
    if (chosen) {
      state.runtimes = chosen.length === 0 || chosen.length === RUNTIMES.length ? [] : chosen.map((c) => c.runtime);
    }
  }
}
