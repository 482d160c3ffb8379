// "Segue: Search Sessions": a quick pick that searches every session's requests, messages, commands and changed
// files as you type (segue/search), then offers the same actions as List Sessions.
import * as vscode from 'vscode';
import type { Actions } from './actions';
import { showError } from './errors';
import { age, escapeIcons, RECENT_LABEL, runtimeIcon, runtimeName, SEARCH_PLACEHOLDER, sessionTitle } from './format';
import { ERROR_CODES, Methods, type SearchResult, type SearchWhere, type Session } from './protocol';
import { PROGRESS_DELAY_MS, type ProgressReport, type SegueServer } from './server';
import { type SessionFilter, sessionKey } from './filter';
import type { SessionTree } from './tree';

export const DEBOUNCE_MS = 250;
const TITLE = 'Search Segue sessions';

interface ResultPick extends vscode.QuickPickItem {
  result?: SearchResult;
  /** a recent session, shown while nothing is typed */
  session?: Session;
}

/** How many recent sessions an empty search shows. */
export const RECENT_COUNT = 10;

function recentPick(s: Session, now: number): ResultPick {
  return {
    label: `$(${runtimeIcon(s.runtime)}) ${escapeIcons(sessionTitle(s, 100))}`,
    description: escapeIcons(`${runtimeName(s.runtime)} · ${age(s.updated_at ?? s.started_at, now)}`),
    alwaysShow: true,
    session: s,
  };
}

const WHERE_ICON: Record<SearchWhere, string> = {
  request: 'comment',
  message: 'hubot',
  command: 'terminal',
  file: 'file',
};

export function toResultPick(r: SearchResult, now: number): ResultPick {
  const title = r.title || '(untitled)';
  const sub = r.parent_id ? ` · subagent of ${(r.parent_title ? oneLine(r.parent_title, 60) : '') || r.parent_id.slice(0, 8)}` : '';
  return {
    label: `$(${runtimeIcon(r.runtime)}) ${escapeIcons(oneLine(title, 100))}`,
    description: escapeIcons(`${runtimeName(r.runtime)} · ${age(r.updated_at, now)}${sub}`),
    detail: `$(${WHERE_ICON[r.where] ?? 'search'}) ${escapeIcons(oneLine(r.snippet, 200))}`,
    alwaysShow: true, // the server decided what matches; the quick pick must not filter again
    result: r,
  };
}

function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** Search as you type; resolves with the picked result, or a recent session picked before typing (undefined
 * when dismissed). */
export function pickSearchResult(server: SegueServer, initial = ''): Promise<SearchResult | Session | undefined> {
  const qp = vscode.window.createQuickPick<ResultPick>();
  qp.title = TITLE;
  qp.placeholder = SEARCH_PLACEHOLDER;
  qp.matchOnDescription = false;
  qp.matchOnDetail = false;
  qp.value = initial;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inflight: vscode.CancellationTokenSource | undefined;
  let generation = 0;
  let recent: ResultPick[] = [];
  const run = async (query: string) => {
    inflight?.cancel(); // $/cancelRequest for the search the user typed past
    const mine = ++generation;
    const started = Date.now();
    if (!query.trim()) {
      qp.items = recent; // nothing typed: the latest sessions, not an empty list
      qp.placeholder = SEARCH_PLACEHOLDER;
      qp.busy = false;
      return;
    }
    const cts = new vscode.CancellationTokenSource();
    inflight = cts;
    qp.busy = true;
    try {
      const r = await server.request(Methods.search, { query, limit: 50 }, cts.token, (p) => {
        if (mine === generation && p.message && Date.now() - started >= PROGRESS_DELAY_MS) {
          qp.title = `${TITLE}: ${p.message}`; // the first search fills the index: say how far it is
        }
      });
      if (mine !== generation) {
        return;
      }
      const now = Date.now();
      qp.items = r.results.map((x) => toResultPick(x, now));
      qp.placeholder = r.total ? `${r.total} matching session${r.total === 1 ? '' : 's'}` : 'No session matches';
    } catch (e) {
      if (mine !== generation || cts.token.isCancellationRequested) {
        return;
      }
      const code = (e as { code?: number }).code;
      if (code === ERROR_CODES.invalid_params) {
        qp.items = [];
        qp.placeholder = (e as Error).message; // a query with nothing to search for: say why, keep typing
      } else {
        qp.hide();
        void showError(e, server.log);
      }
    } finally {
      if (mine === generation) {
        qp.busy = false;
        qp.title = TITLE;
      }
      cts.dispose();
    }
  };
  return new Promise((resolve) => {
    let picked: SearchResult | Session | undefined;
    qp.onDidChangeValue((v) => {
      if (timer) {
        clearTimeout(timer);
      }
      timer = setTimeout(() => void run(v), DEBOUNCE_MS);
    });
    qp.onDidAccept(() => {
      const chosen = qp.selectedItems[0];
      if (chosen?.result ?? chosen?.session) {
        picked = chosen.result ?? chosen.session;
        qp.hide();
      }
    });
    qp.onDidHide(() => {
      if (timer) {
        clearTimeout(timer);
      }
      inflight?.cancel();
      qp.dispose();
      resolve(picked);
    });
    qp.show();
    if (initial) {
      void run(initial);
    }
    // the latest top-level sessions, for the moment nothing is typed (one page from the server, once)
    server.request(Methods.listSessions, { limit: RECENT_COUNT }).then(
      (r) => {
        const now = Date.now();
        recent = r.sessions.length
          ? [{ label: RECENT_LABEL, kind: vscode.QuickPickItemKind.Separator }, ...r.sessions.map((x) => recentPick(x, now))]
          : [];
        if (!qp.value.trim()) {
          qp.items = recent;
        }
      },
      (e: unknown) => server.log.warn(`recent sessions: ${String(e)}`),
    );
  });
}

/** The listed session a result names (subagents included), for the session menu's actions. */
async function sessionOf(server: SegueServer, r: SearchResult): Promise<Session | undefined> {
  const listed = await server.request(Methods.listSessions, {
    runtime: [r.runtime],
    include_subagents: true,
  });
  return listed.sessions.find((s) => s.id === r.id);
}

/** The command: search, then the same menu as List Sessions (brief, resume, other runtime, hand off, trace). */
export async function searchSessions(server: SegueServer, actions: Actions, initial?: string): Promise<SearchResult | Session | undefined> {
  const r = await pickSearchResult(server, initial ?? '');
  if (!r) {
    return undefined;
  }
  const s = 'where' in r ? await sessionOf(server, r) : r;
  if (!s) {
    void vscode.window.showWarningMessage(`Segue: ${runtimeName(r.runtime)} session ${r.id} is no longer listed.`);
    return r;
  }
  await actions.sessionMenu(s);
  return r;
}

// ---- the Sessions view's filter (which sessions it keeps: ./filter) ---------------------------------------------

/** How many matching sessions a filter asks for (the server's cap). */
export const FILTER_LIMIT = 1000;

export async function searchFilter(server: SegueServer, query: string, onProgress?: (p: ProgressReport) => void): Promise<SessionFilter> {
  const r = await server.request(Methods.search, { query, limit: FILTER_LIMIT }, undefined, onProgress);
  return { query, keys: new Set(r.results.map(sessionKey)), total: r.total };
}

/** "Filter Sessions": ask for a term (or take it as the argument), search, and show only what matched. An empty
 * term clears the filter. */
export async function filterSessions(server: SegueServer, tree: SessionTree, query?: string): Promise<SessionFilter | undefined> {
  const q =
    query ??
    (await vscode.window.showInputBox({
      title: 'Filter the Sessions view',
      prompt: 'Words from a request, a message, a command or a file name; "quoted phrases" match as phrases. Empty clears the filter.',
      value: tree.filter?.query ?? '',
    }));
  if (q === undefined) {
    return tree.filter; // dismissed: nothing changes
  }
  if (!q.trim()) {
    tree.setFilter(undefined);
    return undefined;
  }
  try {
    const progress = tree.progress('Filtering');
    let f: SessionFilter;
    try {
      f = await vscode.window.withProgress({ location: { viewId: 'segue.sessions' } }, () => searchFilter(server, q, progress.report));
    } finally {
      progress.done();
    }
    tree.setFilter(f);
    return f;
  } catch (e) {
    if ((e as { code?: number }).code === -32602) {
      void vscode.window.showWarningMessage(`Segue: ${(e as Error).message}`); // nothing to search for: say why
      return tree.filter;
    }
    throw e;
  }
}
