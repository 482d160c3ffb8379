// The "Sessions" view: sessions grouped by runtime or by workspace, subagents nested under their parent.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { handedOffText, runtimeIcon, withFix, runtimeName, sessionDescription, sessionTitle, tildePath } from './format';
import { type Group, type GroupMode, group, type Section, type SessionNode } from './grouping';
import { Methods, type Session } from './protocol';
import { PROGRESS_DELAY_MS, type ProgressReport, type SegueServer } from './server';
import { explain, showError } from './errors';
import { LaunchError } from './python';
import { applyFilter, filterMessage, type SessionFilter } from './filter';
import { searchFilter } from './search';

export type TreeNode =
  | { kind: 'group'; group: Group }
  | { kind: 'section'; section: Section; groupKey: string }
  | { kind: 'session'; node: SessionNode; groupKey: string };

/** The recorded directories that are gone: one stat per distinct directory of a listing (no server trip). */
export async function missingDirectories(sessions: Session[]): Promise<Set<string>> {
  const dirs = [...new Set(sessions.map((s) => s.cwd).filter((d): d is string => !!d))];
  const gone = await Promise.all(
    dirs.map((d) =>
      fs.promises.stat(d).then(
        (st) => !st.isDirectory(),
        (e: NodeJS.ErrnoException) => e.code === 'ENOENT' || e.code === 'ENOTDIR',
      ),
    ),
  );
  return new Set(dirs.filter((_, i) => gone[i]));
}

const MODE_KEY = 'segue.groupMode';

export class SessionTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private loading: Promise<Session[]> | undefined;
  sessions: Session[] | undefined;
  /** Directories of the current listing that no longer exist (their rows say "directory missing"). */
  missing = new Set<string>();
  view: vscode.TreeView<TreeNode> | undefined;
  /** Only the sessions a search found (Filter Sessions); undefined shows every session. */
  filter: SessionFilter | undefined;
  private baseMessage: string | undefined;
  private progressMessage: string | undefined;
  private shownError: string | undefined;

  constructor(
    private readonly server: SegueServer,
    private readonly state: vscode.Memento,
  ) {}

  get mode(): GroupMode {
    return this.state.get<GroupMode>(MODE_KEY, 'runtime');
  }

  async setMode(mode: GroupMode): Promise<void> {
    await this.state.update(MODE_KEY, mode);
    this.changed.fire(undefined);
  }

  async toggleMode(): Promise<GroupMode> {
    const next = this.mode === 'runtime' ? 'workspace' : 'runtime';
    await this.setMode(next);
    return next;
  }

  /** Forget the listing; the view asks again (and so reloads) only if it is visible. */
  refresh(): void {
    this.sessions = undefined;
    this.loading = undefined;
    const f = this.filter;
    if (f) {
      // what matches may have changed with the sessions: search again, then show the new matches
      searchFilter(this.server, f.query).then(
        (next) => {
          if (this.filter === f) {
            this.filter = next;
            this.changed.fire(undefined);
          }
        },
        (e: unknown) => this.server.log.warn(`filter: ${String(e)}`),
      );
    }
    this.changed.fire(undefined);
  }

  /** Show only the sessions `f` found (undefined: all of them); the view's description names the term. */
  setFilter(f: SessionFilter | undefined): void {
    this.filter = f;
    void vscode.commands.executeCommand('setContext', 'segue.filtered', f !== undefined);
    if (this.view) {
      this.view.description = f ? `filter: ${f.query.length > 40 ? `${f.query.slice(0, 39)}…` : f.query}` : undefined;
    }
    if (!f) {
      this.setMessage(undefined);
    }
    this.changed.fire(undefined);
  }

  /** The current listing, loading it if needed (also used by tests and pickers). */
  load(): Promise<Session[]> {
    if (this.sessions) {
      return Promise.resolve(this.sessions);
    }
    if (!this.loading) {
      const progress = this.progress(); // a cold scan: sessions read, runtime by runtime
      const loading = this.server
        .request(Methods.listSessions, { include_subagents: true, limit: 1000 }, undefined, progress.report)
        .then(async (r) => {
          const missing = await missingDirectories(r.sessions);
          if (this.loading === loading) {
            this.sessions = r.sessions;
            this.missing = missing;
          }
          this.setEmpty(r.sessions.length === 0);
          return r.sessions;
        })
        .finally(progress.done);
      loading.catch(() => {
        if (this.loading === loading) {
          this.loading = undefined;
        }
      });
      this.loading = loading;
    }
    return this.loading;
  }

  /** An empty view shows its welcome (viewsWelcome, on `segue.noSessions`): VS Code shows welcome content only
   * while the view has no message, so the message is cleared; the welcome's button shows where Segue looked. */
  private setEmpty(empty: boolean): void {
    void vscode.commands.executeCommand('setContext', 'segue.noSessions', empty);
    this.setMessage(undefined);
  }

  private setMessage(message: string | undefined): void {
    this.baseMessage = message;
    this.showMessage();
  }

  /** Work-done reports of a slow request, shown as the view's message (`what: report`, or the report alone) in
   * place of its own message until `done()`. Nothing shows for the first PROGRESS_DELAY_MS, so a quick answer
   * never flashes. */
  progress(what?: string): { report: (p: ProgressReport) => void; done: () => void } {
    const started = Date.now();
    let finished = false;
    return {
      report: (p) => {
        if (!finished && p.message && Date.now() - started >= PROGRESS_DELAY_MS) {
          this.progressMessage = what ? `${what}: ${p.message}` : p.message.charAt(0).toUpperCase() + p.message.slice(1);
          this.showMessage();
        }
      },
      done: () => {
        finished = true;
        this.progressMessage = undefined;
        this.showMessage();
      },
    };
  }

  private showMessage(): void {
    if (this.view) {
      this.view.message = this.progressMessage ?? this.baseMessage;
    }
  }

  folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  }

  async groups(): Promise<Group[]> {
    const all = await this.load();
    const f = this.filter;
    if (!f) {
      return group(all, this.mode, this.folders());
    }
    const shown = applyFilter(all, f);
    this.setMessage(filterMessage(f, shown.length));
    return group(shown, this.mode, this.folders());
  }

  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    if (!node) {
      try {
        return (await this.groups()).map((g) => ({ kind: 'group', group: g }));
      } catch (e) {
        const { message, fix } = explain(e);
        const text = withFix(message, fix);
        this.setMessage(text);
        if (e instanceof LaunchError && this.shownError !== text) {
          this.shownError = text; // once per failure: the message offers Open Settings, the view cannot
          void showError(e, this.server.log);
        }
        return [];
      }
    }
    if (node.kind === 'group') {
      const g = node.group;
      return g.sections
        ? g.sections.map((section) => ({ kind: 'section', section, groupKey: g.key }))
        : g.nodes.map((n) => ({ kind: 'session', node: n, groupKey: g.key }));
    }
    if (node.kind === 'section') {
      return node.section.nodes.map((n) => ({ kind: 'session', node: n, groupKey: node.groupKey }));
    }
    return node.node.children.map((n) => ({ kind: 'session', node: n, groupKey: node.groupKey }));
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    if (node.kind === 'group') {
      return groupItem(node.group);
    }
    if (node.kind === 'section') {
      return sectionItem(node.section, node.groupKey);
    }
    const cwd = node.node.session.cwd;
    return sessionItem(node.node, node.groupKey, Date.now(), this.mode, !!cwd && this.missing.has(cwd));
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function groupItem(g: Group): vscode.TreeItem {
  const label = g.kind === 'folder' || g.kind === 'directory' ? tildePath(g.label, os.homedir()) : g.label;
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.Expanded);
  item.id = `group/${g.key}`;
  item.contextValue = `segue.group.${g.kind}`;
  item.description = `${g.nodes.length}`;
  item.iconPath = new vscode.ThemeIcon(
    g.kind === 'runtime' ? runtimeIcon(g.key.slice('runtime:'.length)) : g.kind === 'folder' ? 'root-folder' : 'folder',
  );
  return item;
}

function sectionItem(x: Section, groupKey: string): vscode.TreeItem {
  // Older sessions start folded: a group of hundreds opens on what happened lately.
  const item = new vscode.TreeItem(x.label, x.key === 'older' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded);
  item.id = `group/${groupKey}/${x.key}`;
  item.contextValue = 'segue.section';
  item.description = `${x.nodes.length}`;
  item.iconPath = new vscode.ThemeIcon('calendar');
  return item;
}

export function sessionItem(node: SessionNode, groupKey: string, now: number, mode: GroupMode = 'runtime', dirMissing = false): vscode.TreeItem {
  const s = node.session;
  // Marks lead the label as in `segue list` (● live, ⇄ handed off), so a narrow view still shows them.
  const lead = `${s.live ? '● ' : ''}${s.handed_off ? '⇄ ' : ''}`;
  const item = new vscode.TreeItem(
    `${lead}${sessionTitle(s, 80)}`,
    node.children.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
  );
  // Stable across refreshes (group + session), so a refresh keeps what the person expanded.
  item.id = `${groupKey}/${s.runtime}:${s.id}`;
  const flags = [s.live ? '.live' : '', s.handed_off ? '.handedOff' : '', s.parent_id ? '.subagent' : '', dirMissing ? '.noDirectory' : ''];
  item.contextValue = `segue.session${flags.join('')}`;
  item.description = sessionDescription(s, mode, now, os.homedir(), dirMissing);
  // The runtime's icon always; its colour says live (a runtime process holds it) or handed off (a live token).
  item.iconPath = new vscode.ThemeIcon(
    s.parent_id ? 'type-hierarchy-sub' : runtimeIcon(s.runtime),
    s.live ? new vscode.ThemeColor('charts.green') : s.handed_off ? new vscode.ThemeColor('charts.blue') : dirMissing ? new vscode.ThemeColor('disabledForeground') : undefined,
  );
  item.tooltip = tooltip(s, now, dirMissing);
  // Opens the brief and keeps the keyboard in the tree, so arrow keys go on moving through sessions.
  item.command = { command: 'segue.openBriefKeepFocus', title: 'Open Brief', arguments: [s] };
  return item;
}

function tooltip(s: Session, now: number, dirMissing = false): vscode.MarkdownString {
  // Session text is untrusted: appendText escapes it, and the string is not trusted (no command links).
  const md = new vscode.MarkdownString();
  md.appendText(sessionTitle(s, 200));
  md.appendMarkdown('\n\n');
  const rows: [string, string | null][] = [
    ['Runtime', runtimeName(s.runtime)],
    ['Session', s.id],
    ['Directory', s.cwd && dirMissing ? `${s.cwd} (missing: Resume asks for another)` : s.cwd],
    ['Branch', s.branch],
    ['Model', s.model],
    ['Updated', s.updated_at],
    ['Started', s.started_at],
    ['Subagents', s.subagent_count ? String(s.subagent_count) : null],
    ['Continues', s.continues ? `${s.continues.runtime}:${s.continues.id}` : null],
    ['Status', [s.live ? 'live' : '', handedOffText(s.handed_off, now)].filter(Boolean).join(', ') || null],
    ['Resume', s.resumable ? `reopens in ${runtimeName(s.runtime)}` : s.resume_blocker === 'no_directory' ? 'in a directory you choose (none recorded)' : `new session from the brief (${s.resume_blocker ?? 'not resumable'})`],
    ['Problems', s.problems.length ? s.problems.join('; ') : null],
  ];
  for (const [k, v] of rows) {
    if (v) {
      md.appendMarkdown(`**${k}:** `);
      md.appendText(v);
      md.appendMarkdown('  \n');
    }
  }
  return md;
}
