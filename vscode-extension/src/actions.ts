// What a person can do with a session: brief, resume (natively or in another runtime), hand off, trace.
import * as vscode from 'vscode';
import { BRIEF_SCHEME, type BriefProvider, briefUri, refFromBriefUri, showBrief } from './documents';
import { errorData, isCode, showError } from './errors';
import {
  age,
  confirmation,
  runtimeChoices,
  escapeIcons,
  oneLine,
  planDetail,
  runtimeIcon,
  runtimeName,
  sessionTitle,
  terminalCommand,
  terminalName,
} from './format';
import { pickSession, type PickState } from './picker';
import {
  type ClaimTokenResult,
  type EmitTokenResult,
  ERROR_CODES,
  Methods,
  type PlanResumeParams,
  type ResumeCommandResult,
  isPlan,
  type Plan,
  refOf,
  type Runtime,
  RUNTIMES,
  type Session,
  type SessionRef,
  TOKEN_PATTERN,
  type TraceResult,
} from './protocol';
import type { SegueServer } from './server';
import type { SessionTree, TreeNode } from './tree';

export interface Target {
  ref: string;
  runtime?: string;
  title?: string;
  session?: Session;
}

/** The shell a copied resume command is quoted for: the setting, else PowerShell on Windows, else POSIX. */
export function resumeShell(): 'posix' | 'powershell' {
  const v = vscode.workspace.getConfiguration('segue').get<string>('resumeShell');
  if (v === 'posix' || v === 'powershell') {
    return v;
  }
  return process.platform === 'win32' ? 'powershell' : 'posix';
}

export class Actions {
  readonly pickState: PickState = { runtimes: [], folderOnly: false };
  /** Sessions this window emitted a handoff token for (the status bar shows only these). */
  readonly emittedHere = new Set<string>();
  private readonly emittedChanged = new vscode.EventEmitter<void>();
  readonly onDidEmit = this.emittedChanged.event;
  /** Set by extension.ts: shows a trace as a chain in the Trace view. */
  showTrace: ((r: TraceResult, t: Target) => Promise<void>) | undefined;

  constructor(
    private readonly server: SegueServer,
    private readonly tree: SessionTree,
    private readonly briefs?: BriefProvider,
  ) {}

  private get log(): vscode.LogOutputChannel {
    return this.server.log;
  }

  /** Commands get a tree node, a Session, a {runtime,id}, a "runtime:id" string, or nothing (then: pick). */
  async target(arg: unknown, title: string): Promise<Target | undefined> {
    if (arg instanceof vscode.Uri && arg.scheme === BRIEF_SCHEME) {
      const ref = refFromBriefUri(arg);
      return ref ? { ref, runtime: ref.split(':', 1)[0] } : undefined;
    }
    const traced = arg as { kind?: string; link?: SessionRef & { title: string | null } } | undefined;
    if (traced?.kind === 'trace' && traced.link) {
      return { ref: refOf(traced.link), runtime: traced.link.runtime, title: traced.link.title ?? undefined };
    }
    if (typeof arg === 'string' && arg) {
      const [runtime] = arg.split(':', 1);
      return { ref: arg, runtime: arg.includes(':') ? runtime : undefined };
    }
    const node = arg as Partial<TreeNode> | undefined;
    const s = node?.kind === 'session' && node.node ? node.node.session : (arg as Partial<Session> | undefined);
    if (s && typeof s.runtime === 'string' && typeof s.id === 'string') {
      const full = 'resumable' in s ? (s as Session) : undefined;
      return { ref: refOf(s as { runtime: string; id: string }), runtime: s.runtime, title: s.title ?? undefined, session: full };
    }
    // Other commands start unfiltered; only List Sessions remembers its filters.
    const picked = await pickSession(this.server, title, { runtimes: [], folderOnly: false });
    return picked && { ref: refOf(picked), runtime: picked.runtime, title: picked.title ?? undefined, session: picked };
  }

  async listSessions(): Promise<void> {
    const s = await pickSession(this.server, 'Segue sessions', this.pickState);
    if (s) {
      await this.sessionMenu(s);
    }
  }

  async sessionMenu(s: Session): Promise<void> {
    const t: Target = { ref: refOf(s), runtime: s.runtime, title: s.title ?? undefined, session: s };
    const items: (vscode.QuickPickItem & { run: () => Promise<unknown> })[] = [
      { label: '$(book) Open Brief', run: () => this.openBrief(t) },
      {
        label: '$(debug-continue) Resume',
        description: s.resumable
          ? `in ${runtimeName(s.runtime)}`
          : s.resume_blocker === 'no_directory'
            ? 'in a directory you choose (none recorded)'
            : 'as a new session from the brief',
        run: () => this.resume(t),
      },
      { label: '$(arrow-right) Resume in Another Runtime', run: () => this.resumeInRuntime(t) },
      { label: '$(copy) Copy Resume Command', description: 'to paste into any terminal', run: () => this.copyResumeCommand(t) },
      { label: '$(key) Emit Handoff Token', run: () => this.emitToken(t) },
      { label: '$(git-commit) Trace Session', run: () => this.trace(t) },
    ];
    const choice = await vscode.window.showQuickPick(items, {
      title: escapeIcons(sessionTitle(s, 80)),
      placeHolder: `${runtimeName(s.runtime)} session ${s.id}`,
    });
    await choice?.run();
  }

  /** `keepFocus`: the brief shows beside the reader's place without taking the keyboard (from the tree). */
  async openBrief(t: Target, keepFocus = false): Promise<void> {
    const [runtime, ...rest] = t.ref.split(':');
    const uri = rest.length ? briefUri({ runtime, id: rest.join(':') }) : undefined;
    try {
      // A prefix ref has no runtime yet: ask the server, whose answer names the canonical URI.
      const target = uri ?? vscode.Uri.parse((await this.server.request(Methods.brief, { ref: t.ref })).uri);
      await showBrief(target, false, keepFocus);
    } catch (e) {
      await showError(e, this.log);
    }
  }

  async resume(t: Target, params: Omit<PlanResumeParams, 'ref'> = {}): Promise<vscode.Terminal | undefined> {
    let plan: Plan;
    try {
      // shown first, written only once confirmed: a declined new session leaves no brief behind
      plan = await this.server.request(Methods.planResume, { ref: t.ref, ...params, write: false });
    } catch (e) {
      if (isCode(e, ERROR_CODES.missing_directory)) {
        const choose = 'Choose Another Directory…';
        if ((await showError(e, this.log, [choose])) === choose) {
          const dir = await vscode.window.showOpenDialog({
            canSelectFolders: true,
            canSelectFiles: false,
            openLabel: 'Start Here',
            title: `Directory for the new session (was ${errorData(e).cwd ?? 'unknown'})`,
          });
          if (dir?.[0]) {
            return this.resume(t, { ...params, cwd: dir[0].fsPath });
          }
        }
        return undefined;
      }
      await showError(e, this.log);
      return undefined;
    }
    return this.confirmAndLaunch(plan, { ref: t.ref, ...params });
  }

  /** The plan in a modal; nothing runs unless the person says so (a live or handed-off session: a warning,
   * and the button says "Anyway"). `unwritten`: the plan was made without writing its brief (write: false);
   * once confirmed, a new-session plan is made again with the brief written, and that one runs. */
  async confirmAndLaunch(plan: Plan, unwritten?: PlanResumeParams): Promise<vscode.Terminal | undefined> {
    const { question, button, warn } = confirmation(plan);
    const show = warn ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const choice = await show(question, { modal: true, detail: planDetail(plan, Date.now()) }, button);
    if (choice !== button) {
      return undefined;
    }
    if (unwritten && plan.brief_path) {
      try {
        plan = await this.server.request(Methods.planResume, { ...unwritten, write: true });
      } catch (e) {
        await showError(e, this.log);
        return undefined;
      }
    }
    return this.launch(plan);
  }

  /** argv goes to the pty as an argument vector: no shell parses session text. On POSIX a fixed sh script runs
   * it (`"$0" "$@"`, the argv as its positional parameters) and, when the agent exits non-zero, keeps the
   * terminal open with the exit code until Enter, so its output ("Error: not logged in") stays readable. */
  launch(plan: Plan): vscode.Terminal {
    if (plan.argv.length === 0) {
      throw new Error('Segue returned an empty command');
    }
    const home = this.server.launch?.segueHome;
    const { shellPath, shellArgs } = terminalCommand(plan.argv, process.platform);
    const term = vscode.window.createTerminal({
      name: terminalName(plan.session.title, plan.session),
      cwd: plan.cwd,
      shellPath,
      shellArgs,
      env: home ? { SEGUE_HOME: home } : undefined,
      iconPath: new vscode.ThemeIcon(runtimeIcon(plan.runtime)),
    });
    term.show();
    this.log.info(`launched ${plan.runtime} for ${plan.session.runtime}:${plan.session.id} in ${plan.cwd}`);
    return term;
  }

  async resumeInRuntime(t: Target): Promise<vscode.Terminal | undefined> {
    const preferred = vscode.workspace.getConfiguration('segue').get<string>('defaultRuntime') || undefined;
    // which CLIs are on PATH where the server runs (as a plan looks for them); unknown if the server cannot say
    const clis = await this.server.request(Methods.runtimes, {}).then(
      (r) => r.runtimes,
      (e: unknown) => void this.log.warn(`runtimes: ${String(e)}`),
    );
    const choice = await vscode.window.showQuickPick(
      runtimeChoices(RUNTIMES, t.runtime, preferred, clis ?? undefined).map((c) => ({
        label: `$(${runtimeIcon(c.runtime)}) ${runtimeName(c.runtime)}`,
        description: c.description,
        detail: c.detail,
        runtime: c.runtime as Runtime,
      })),
      { title: `Continue ${escapeIcons(oneLine(t.title, 60) || t.ref)} in`, placeHolder: 'A new session starts there from the brief' },
    );
    return choice ? this.resume(t, { runtime: choice.runtime }) : undefined;
  }

  async emitToken(t: Target): Promise<EmitTokenResult | undefined> {
    let r: EmitTokenResult;
    try {
      r = await this.server.request(Methods.emitToken, { ref: t.ref, from: 'editor' });
    } catch (e) {
      await showError(e, this.log);
      return undefined;
    }
    let copied = true;
    try {
      await vscode.env.clipboard.writeText(r.token);
    } catch {
      copied = false; // e.g. a browser that refuses clipboard access
    }
    this.emittedHere.add(t.ref.includes(':') ? t.ref : `${t.runtime ?? ''}:${t.ref}`);
    this.emittedChanged.fire();
    this.tree.refresh();
    const until = new Date(r.expires_at);
    const detail = [
      r.token,
      '',
      `${copied ? 'Copied to the clipboard. ' : ''}It works once, until ${Number.isNaN(until.getTime()) ? r.expires_at : until.toLocaleTimeString()}.`,
      'Claim it in a terminal with "segue handoff claim", or in another editor with "Segue: Claim Handoff Token".',
    ].join('\n');
    // Shown once: the token is not logged and not kept anywhere by the extension.
    // "Close", not the modal's default "Cancel": dismissing it cancels nothing, the token stays valid.
    const again: vscode.MessageItem = { title: 'Copy Again' };
    const close: vscode.MessageItem = { title: 'Close', isCloseAffordance: true };
    void vscode.window
      .showInformationMessage(`Handoff token for "${oneLine(t.title, 60) || t.ref}"`, { modal: true, detail }, again, close)
      .then((c) => (c === again ? vscode.env.clipboard.writeText(r.token) : undefined))
      .then(undefined, (e: unknown) => this.log.warn(`token dialog: ${String(e)}`));
    return r;
  }

  async claimToken(given?: string): Promise<ClaimTokenResult | undefined> {
    const token =
      typeof given === 'string' && given
        ? given
        : await vscode.window.showInputBox({
            title: 'Claim a Segue handoff token',
            prompt: 'Paste the token from "segue handoff emit" or from another editor',
            placeHolder: 'h_…',
            password: true,
            ignoreFocusOut: true,
            validateInput: (v) =>
              v === '' || TOKEN_PATTERN.test(v.trim()) ? undefined : 'A handoff token is h_ followed by letters, digits, - or _.',
          });
    if (!token?.trim()) {
      return undefined;
    }
    let r: ClaimTokenResult;
    try {
      r = await this.server.request(Methods.claimToken, { token: token.trim(), as: 'editor' });
    } catch (e) {
      await showError(e, this.log);
      return undefined;
    }
    this.tree.refresh();
    // One document, the brief, in the active group and the chosen view (rendered or source): it carries Resume
    // and Continue in Another Runtime in its title bar, so they stay at hand after the toast goes. The claim
    // read the session fresh: a brief of it already open is re-read.
    const uri = briefUri(r.session);
    this.briefs?.refresh(uri);
    await showBrief(uri).catch((e: unknown) => showError(e, this.log));
    const title = oneLine(r.session.title, 60) || r.session.id;
    const resume = 'Resume';
    const other = 'Resume in Another Runtime';
    void vscode.window
      .showInformationMessage(
        `Claimed the handoff of "${title}" from the ${r.source_surface}. Resume and Continue in Another Runtime stay in its brief's title bar.`,
        resume,
        other,
      )
      .then((c) => {
        const t: Target = { ref: refOf(r.session), runtime: r.session.runtime, title: r.session.title ?? undefined };
        if (c === resume) {
          // a plan that could not be made (say, the directory is gone): resume again, which explains why
          return isPlan(r.plan) ? this.confirmAndLaunch(r.plan) : this.resume(t);
        }
        return c === other ? this.resumeInRuntime(t) : undefined;
      })
      .then(undefined, (e: unknown) => showError(e, this.log));
    return r;
  }

  /** A command line for another terminal (`cd DIR && claude --resume ID`), onto the clipboard. */
  async copyResumeCommand(t: Target, params: Omit<PlanResumeParams, 'ref'> = {}): Promise<string | undefined> {
    let r: ResumeCommandResult;
    try {
      r = await this.server.request(Methods.resumeCommand, { ref: t.ref, shell: resumeShell(), ...params });
    } catch (e) {
      await showError(e, this.log);
      return undefined;
    }
    await vscode.env.clipboard.writeText(r.command);
    this.log.info(`copied the resume command of ${t.ref} (${r.shell})`);
    const how = r.plan.mode === 'native' ? `reopens it in ${runtimeName(r.plan.runtime)}` : `starts a new ${runtimeName(r.plan.runtime)} session from its brief`;
    void vscode.window.showInformationMessage(`Copied a ${r.shell === 'powershell' ? 'PowerShell' : 'shell'} command that ${how}: ${oneLine(r.command, 160)}`);
    return r.command;
  }

  async trace(t: Target): Promise<TraceResult | undefined> {
    let r: TraceResult;
    try {
      r = await this.server.request(Methods.trace, { ref: t.ref });
    } catch (e) {
      await showError(e, this.log);
      return undefined;
    }
    if (this.showTrace) {
      await this.showTrace(r, t);
      return r;
    }
    const now = Date.now();
    void vscode.window
      .showQuickPick(
        r.chain.map((link, i) => ({
          label: `${i + 1}. $(${runtimeIcon(link.runtime)}) ${escapeIcons(oneLine(link.title, 80) || '(untitled)')}`,
          description: [
            refOf(link) === t.ref || (t.runtime === link.runtime && t.ref.endsWith(`:${link.id}`)) ? 'this session' : '',
            runtimeName(link.runtime),
            link.found ? '' : 'not found',
            link.started_at ? `started ${age(link.started_at, now)}` : '',
          ]
            .filter(Boolean)
            .join(' · '),
          detail: link.continues ? `continues ${link.continues.runtime}:${link.continues.id}` : 'the origin',
          link,
        })),
        {
          title: r.chain.length > 1 ? `Trace: ${r.chain.length} sessions, oldest first` : 'Trace: this session continues no other',
          placeHolder: 'Pick one to open its brief',
        },
      )
      .then((c) => (c ? this.openBrief({ ref: refOf(c.link) }) : undefined))
      .then(undefined, (e: unknown) => showError(e, this.log));
    return r;
  }
}
