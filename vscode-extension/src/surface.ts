// The editor surface around a session: actions on a brief (CodeLens on the source, title-bar actions on the
// preview), the handoff status bar item, and the Trace view (a chain of sessions, each opening its brief).
import * as vscode from 'vscode';
import type { Actions, Target } from './actions';
import { activePreviewUri, BRIEF_SCHEME, type BriefProvider, refFromBriefUri, showMarkdown, showRendered } from './documents';
import { showError } from './errors';
import { age, clock, escapeIcons, oneLine, runtimeIcon, runtimeName } from './format';
import { Methods, refOf, type RevokeTokenResult, type TokenStatus, type TraceLink, type TraceResult } from './protocol';
import type { SegueServer } from './server';

/** The actions a brief offers, in the order they are shown. `stale` ones appear only when the session grew. */
export const BRIEF_ACTIONS = [
  { id: 'segue.brief.refresh', title: '$(refresh) Session grew: refresh the brief', stale: true },
  { id: 'segue.brief.resume', title: '$(debug-continue) Resume' },
  { id: 'segue.brief.continueIn', title: '$(arrow-right) Continue in another runtime' },
  { id: 'segue.brief.handOff', title: '$(key) Hand off (emit token)' },
  { id: 'segue.brief.copyResume', title: '$(copy) Copy resume command' },
  { id: 'segue.brief.trace', title: '$(git-commit) Trace' },
] as const;

/** CodeLens at the top of a brief's source: the same actions as the preview's title bar. */
export class BriefLens implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly sub: vscode.Disposable;

  constructor(private readonly briefs: BriefProvider) {
    this.sub = briefs.onDidChangeStale(() => this.changed.fire());
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    if (doc.uri.scheme !== BRIEF_SCHEME || !refFromBriefUri(doc.uri)) {
      return [];
    }
    const stale = this.briefs.stale.has(doc.uri.toString());
    const top = new vscode.Range(0, 0, 0, 0);
    return BRIEF_ACTIONS.filter((a) => !('stale' in a) || stale).map(
      (a) => new vscode.CodeLens(top, { title: a.title, command: a.id, arguments: [doc.uri] }),
    );
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}

/** The brief an action applies to: the URI it was given, else the active brief editor or brief preview. */
export function briefTarget(arg: unknown, briefs: BriefProvider): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri && arg.scheme === BRIEF_SCHEME) {
    return arg;
  }
  const doc = vscode.window.activeTextEditor?.document;
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
  if (doc?.uri.scheme === BRIEF_SCHEME && tab?.input instanceof vscode.TabInputText && tab.input.uri.toString() === doc.uri.toString()) {
    return doc.uri;
  }
  return activePreviewUri(briefs.renderedAt.keys());
}

/** Keeps `segue.briefActive` / `segue.activeBriefStale` in step with the active tab, for title-bar menus. */
export function trackActiveBrief(briefs: BriefProvider): vscode.Disposable {
  const update = () => {
    const uri = briefTarget(undefined, briefs);
    void vscode.commands.executeCommand('setContext', 'segue.briefActive', !!uri);
    void vscode.commands.executeCommand('setContext', 'segue.activeBriefStale', !!uri && briefs.stale.has(uri.toString()));
  };
  update();
  return vscode.Disposable.from(
    vscode.window.tabGroups.onDidChangeTabs(update),
    vscode.window.tabGroups.onDidChangeTabGroups(update),
    vscode.window.onDidChangeActiveTextEditor(update),
    briefs.onDidChangeStale(update),
  );
}

export function registerBriefCommands(actions: Actions, briefs: BriefProvider, run: (id: string, fn: (arg?: unknown) => unknown) => vscode.Disposable): vscode.Disposable[] {
  const on = (id: string, fn: (uri: vscode.Uri, t: Target) => unknown) =>
    run(id, async (arg?: unknown) => {
      const uri = briefTarget(arg, briefs);
      const ref = uri && refFromBriefUri(uri);
      if (!uri || !ref) {
        void vscode.window.showWarningMessage('Open a Segue brief first.');
        return undefined;
      }
      return fn(uri, { ref, runtime: ref.split(':', 1)[0] });
    });
  return [
    on('segue.brief.resume', (_u, t) => actions.resume(t)),
    on('segue.brief.continueIn', (_u, t) => actions.resumeInRuntime(t)),
    on('segue.brief.handOff', (_u, t) => actions.emitToken(t)),
    on('segue.brief.copyResume', (_u, t) => actions.copyResumeCommand(t)),
    on('segue.brief.trace', (_u, t) => actions.trace(t)),
    on('segue.brief.refresh', (u) => briefs.refresh(u)),
    on('segue.brief.showSource', (u) => showMarkdown(u)),
    on('segue.brief.showPreview', (u) => showRendered(u)),
  ];
}

/**
 * While a token this window emitted is live and unclaimed: "$(key) 1 handoff 4:32" in the status bar. Clicking
 * it shows the token's session (never the token) and offers to revoke it.
 */
export class HandoffStatus implements vscode.Disposable {
  readonly item = vscode.window.createStatusBarItem('segue.handoffs', vscode.StatusBarAlignment.Left, 10);
  live: TokenStatus[] = [];
  private fetchedAt = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly server: SegueServer,
    private readonly actions: Actions,
  ) {
    this.item.name = 'Segue handoff tokens';
    this.item.command = 'segue.showHandoffs';
    this.subs.push(actions.onDidEmit(() => void this.poll()), server.onSessionsChanged(() => void this.poll()));
  }

  /** Ask the server which tokens are live (claims from other surfaces show up here). */
  async poll(): Promise<TokenStatus[]> {
    if (this.actions.emittedHere.size === 0) {
      this.live = [];
    } else {
      try {
        const r = await this.server.request(Methods.tokenStatus, {});
        this.live = r.tokens.filter((t) => t.surface === 'editor' && !t.claimed && this.actions.emittedHere.has(refOf(t.session)));
        this.fetchedAt = Date.now();
      } catch (e) {
        this.server.log.warn(`token status: ${String(e)}`);
      }
    }
    this.render();
    return this.live;
  }

  secondsLeft(t: TokenStatus): number {
    return t.seconds_left - (Date.now() - this.fetchedAt) / 1000;
  }

  private render(): void {
    const live = this.live.filter((t) => this.secondsLeft(t) > 0);
    if (live.length === 0) {
      this.item.hide();
      if (this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
      return;
    }
    const soonest = Math.min(...live.map((t) => this.secondsLeft(t)));
    this.item.text = `$(key) ${live.length} handoff${live.length === 1 ? '' : 's'} ${clock(soonest)}`;
    this.item.tooltip = `Segue: ${live.length} handoff token${live.length === 1 ? '' : 's'} from this editor not claimed yet (the first expires in ${clock(soonest)}). Click to see or revoke.`;
    this.item.show();
    if (!this.timer) {
      let ticks = 0;
      // Count down each second; ask the server again every 10 s so claims elsewhere clear the item.
      this.timer = setInterval(() => (++ticks % 10 === 0 ? void this.poll() : this.render()), 1000);
    }
  }

  async show(): Promise<void> {
    await this.poll();
    if (this.live.length === 0) {
      void vscode.window.showInformationMessage('No handoff token from this editor is waiting to be claimed.');
      return;
    }
    const pick = await vscode.window.showQuickPick(
      this.live.map((t) => ({
        label: `$(${runtimeIcon(t.session.runtime)}) ${escapeIcons(oneLine(t.session.title, 80) || '(untitled)')}`,
        description: `${runtimeName(t.session.runtime)} · expires in ${clock(this.secondsLeft(t))}`,
        detail: `${t.session.runtime}:${t.session.id} · emitted ${age(t.issued_at, Date.now())} · not claimed yet`,
        t,
      })),
      { title: 'Handoff tokens from this editor', placeHolder: 'Pick one to revoke it or open its brief' },
    );
    if (!pick) {
      return;
    }
    const revoke = 'Revoke Token';
    const brief = 'Open Brief';
    const choice = await vscode.window.showQuickPick([revoke, brief], {
      title: `Handoff of ${escapeIcons(oneLine(pick.t.session.title, 60) || pick.t.session.id)}`,
    });
    if (choice === revoke) {
      await this.revoke(pick.t.session);
    } else if (choice === brief) {
      await this.actions.openBrief({ ref: refOf(pick.t.session) });
    }
  }

  async revoke(s: { runtime: string; id: string }): Promise<RevokeTokenResult | undefined> {
    try {
      const r = await this.server.request(Methods.revokeToken, { ref: refOf(s), surface: 'editor' });
      this.actions.emittedHere.delete(refOf(s));
      await this.poll();
      void vscode.window.showInformationMessage(
        r.revoked ? `Revoked the handoff token of "${oneLine(r.session.title, 60) || r.session.id}".` : 'That token was already claimed or expired.',
      );
      return r;
    } catch (e) {
      await showError(e, this.server.log);
      return undefined;
    }
  }

  dispose(): void {
    if (this.timer) {
      clearInterval(this.timer);
    }
    this.subs.forEach((d) => d.dispose());
    this.item.dispose();
  }
}

export interface TraceNode {
  kind: 'trace';
  link: TraceLink;
  index: number;
  self: boolean;
}

/** The Trace view: the last traced chain, oldest first, each session opening its brief. */
export class TraceTree implements vscode.TreeDataProvider<TraceNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TraceNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  chain: TraceNode[] = [];
  view: vscode.TreeView<TraceNode> | undefined;

  async show(r: TraceResult, t: Target): Promise<void> {
    const isSelf = (l: TraceLink) => refOf(l) === t.ref || (t.runtime === l.runtime && t.ref.endsWith(`:${l.id}`));
    this.chain = r.chain.map((link, index) => ({ kind: 'trace', link, index, self: isSelf(link) }));
    this.changed.fire(undefined);
    await vscode.commands.executeCommand('setContext', 'segue.hasTrace', true);
    if (this.view) {
      const self = this.chain.find((n) => n.self) ?? this.chain[0];
      this.view.title = `Trace (${this.chain.length})`;
      this.view.description = oneLine(self?.link.title, 40) || self?.link.id;
      this.view.message = this.chain.length > 1 ? undefined : 'This session continues no other, and none continues it yet.';
      if (self) {
        await this.view.reveal(self, { focus: false, select: true }).then(undefined, () => undefined);
      }
    }
  }

  getChildren(node?: TraceNode): TraceNode[] {
    return node ? [] : this.chain;
  }

  getParent(): undefined {
    return undefined;
  }

  getTreeItem(n: TraceNode): vscode.TreeItem {
    const l = n.link;
    const item = new vscode.TreeItem(`${n.index + 1}. ${oneLine(l.title, 80) || l.id}`, vscode.TreeItemCollapsibleState.None);
    item.id = `trace/${refOf(l)}`;
    item.description = [n.self ? 'this session' : '', runtimeName(l.runtime), l.found ? '' : 'not found', l.started_at ? `started ${age(l.started_at, Date.now())}` : '', n.index === 0 ? 'the origin' : '']
      .filter(Boolean)
      .join(' · ');
    item.iconPath = new vscode.ThemeIcon(runtimeIcon(l.runtime));
    item.contextValue = 'segue.trace';
    const md = new vscode.MarkdownString();
    md.appendText(`${refOf(l)}${l.continues ? `\ncontinues ${refOf(l.continues)}` : '\nthe origin'}`);
    item.tooltip = md;
    item.command = { command: 'segue.openBrief', title: 'Open Brief', arguments: [refOf(l)] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
