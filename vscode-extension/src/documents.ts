// Read-only virtual Markdown documents: briefs (from the server) and notes (claim summaries, traces).
import * as vscode from 'vscode';
import { type BriefResult, Methods, type SessionRef } from './protocol';
import type { SegueServer } from './server';

export const BRIEF_SCHEME = 'segue-brief';
export const NOTE_SCHEME = 'segue-note';

/** `segue-brief:/RUNTIME/ID.md`, the URI the server also returns from `segue/brief`. */
export function briefUri(ref: SessionRef): vscode.Uri {
  return vscode.Uri.from({ scheme: BRIEF_SCHEME, path: `/${ref.runtime}/${ref.id}.md` });
}

export function refFromBriefUri(uri: vscode.Uri): string | undefined {
  const m = /^\/([a-z]+)\/(.+)\.md$/.exec(uri.path);
  return m ? `${m[1]}:${m[2]}` : undefined;
}

export class BriefProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: SegueServer) {}

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const ref = refFromBriefUri(uri);
    if (!ref) {
      return `# Not a Segue brief\n\n${uri.toString()} does not name a session.\n`;
    }
    try {
      const r = await this.server.request<BriefResult>(Methods.brief, { ref }, token);
      return r.markdown;
    } catch (e) {
      // The document stays open, so say what went wrong inside it rather than leaving it blank.
      return `# Brief unavailable\n\nSegue could not build the brief for \`${ref}\`: ${e instanceof Error ? e.message : String(e)}\n`;
    }
  }

  /** Re-read every open brief (after `segue/sessionsChanged`). */
  refreshOpen(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === BRIEF_SCHEME && !doc.isClosed) {
        this.changed.fire(doc.uri);
      }
    }
  }

  dispose(): void {
    this.changed.dispose();
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

export async function showMarkdown(uri: vscode.Uri, beside = false): Promise<vscode.TextEditor> {
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'markdown') {
    doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  }
  return vscode.window.showTextDocument(doc, {
    preview: false,
    viewColumn: beside ? vscode.ViewColumn.Beside : undefined,
  });
}
