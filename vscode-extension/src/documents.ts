// Read-only virtual Markdown documents: briefs (from the server) and notes (claim summaries, traces).
import * as vscode from 'vscode';
import { Methods } from './protocol';
import type { SegueServer } from './server';

export const BRIEF_SCHEME = 'segue-brief';
export const NOTE_SCHEME = 'segue-note';

/** `segue-brief:/RUNTIME/ID.md`, the URI the server also returns from `segue/brief`. */
export function briefUri(ref: { runtime: string; id: string }): vscode.Uri {
  return vscode.Uri.from({ scheme: BRIEF_SCHEME, path: `/${ref.runtime}/${ref.id}.md` });
}

export function refFromBriefUri(uri: vscode.Uri): string | undefined {
  const m = /^\/([a-z]+)\/(.+)\.md$/.exec(uri.path);
  return m ? `${m[1]}:${m[2]}` : undefined;
}

export class BriefProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** Per brief URI: the session's last activity when the brief was rendered (to tell when it grew). */
  readonly renderedAt = new Map<string, string | null>();
  /** Briefs whose session has grown since they were rendered. */
  readonly stale = new Set<string>();
  private readonly staleChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeStale = this.staleChanged.event;

  constructor(private readonly server: SegueServer) {}

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const ref = refFromBriefUri(uri);
    if (!ref) {
      return `# Not a Segue brief\n\n${uri.toString()} does not name a session.\n`;
    }
    try {
      const r = await this.server.request(Methods.brief, { ref }, token);
      this.renderedAt.set(uri.toString(), r.facts.session.updated_at);
      if (this.stale.delete(uri.toString())) {
        this.staleChanged.fire();
      }
      return r.markdown;
    } catch (e) {
      // The document stays open, so say what went wrong inside it rather than leaving it blank.
      return `# Brief unavailable\n\nSegue could not build the brief for \`${ref}\`: ${e instanceof Error ? e.message : String(e)}\n`;
    }
  }

  /** Re-read every open brief. */
  refreshOpen(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === BRIEF_SCHEME && !doc.isClosed) {
        this.changed.fire(doc.uri);
      }
    }
  }

  /** Re-read one brief (its Refresh action). */
  refresh(uri: vscode.Uri): void {
    this.changed.fire(uri);
  }

  /**
   * After `segue/sessionsChanged`: a brief whose session's last activity moved past the one it was rendered
   * from is marked stale (its Refresh action appears); the text a person is reading does not change under them.
   */
  markGrown(sessions: { runtime: string; id: string; updated_at: string | null }[]): void {
    let changed = false;
    for (const s of sessions) {
      const key = briefUri(s).toString();
      if (!this.renderedAt.has(key) || this.stale.has(key)) {
        continue;
      }
      const then = this.renderedAt.get(key);
      const a = then ? Date.parse(then) : NaN;
      const b = s.updated_at ? Date.parse(s.updated_at) : NaN;
      if (!Number.isNaN(b) && (Number.isNaN(a) || b > a)) {
        this.stale.add(key);
        changed = true;
      }
    }
    if (changed) {
      this.staleChanged.fire();
    }
  }

  dispose(): void {
    this.changed.dispose();
    this.staleChanged.dispose();
  }
}

/** In-memory Markdown the extension writes itself; kept per URI so reopening shows the same text. */
export class NoteProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly notes = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(path: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: NOTE_SCHEME, path });
    this.notes.set(uri.toString(), markdown);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.notes.get(uri.toString()) ?? '# Gone\n\nThis note was not kept after a reload.\n';
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export async function showMarkdown(uri: vscode.Uri, beside = false, preserveFocus = false): Promise<vscode.TextEditor> {
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'markdown') {
    doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  }
  return vscode.window.showTextDocument(doc, {
    preview: false,
    preserveFocus,
    viewColumn: beside ? vscode.ViewColumn.Beside : undefined,
  });
}

/** Open a Segue document rendered (VS Code's Markdown preview) or as its read-only source. */
export async function showRendered(uri: vscode.Uri, beside = false): Promise<void> {
  // Load it first so the preview has content and the language is Markdown.
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'markdown') {
    doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  }
  await vscode.commands.executeCommand(beside ? 'markdown.showPreviewToSide' : 'markdown.showPreview', uri);
}

export function briefView(): 'preview' | 'source' {
  return vscode.workspace.getConfiguration('segue').get<string>('briefView') === 'source' ? 'source' : 'preview';
}

/** A brief the way the setting says (rendered by default). */
export async function showBrief(uri: vscode.Uri, beside = false, keepFocus = false): Promise<void> {
  if (briefView() === 'source') {
    await showMarkdown(uri, beside, keepFocus);
    return;
  }
  await showRendered(uri, beside);
  if (keepFocus) {
    // markdown.showPreview has no preserveFocus: give the keyboard back to the Sessions view
    await vscode.commands.executeCommand('segue.sessions.focus');
  }
}

/** Markdown previews are webviews titled "Preview <file name>": the Segue document the active one shows. */
export function activePreviewUri(known: Iterable<string>): vscode.Uri | undefined {
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
  if (!tab || !(tab.input instanceof vscode.TabInputWebview) || !/markdown\.preview/.test(tab.input.viewType)) {
    return undefined;
  }
  const name = tab.label.replace(/^\[?Preview\]? /, '');
  for (const k of known) {
    const u = vscode.Uri.parse(k);
    if (u.path.endsWith(`/${name}`)) {
      return u;
    }
  }
  return undefined;
}
