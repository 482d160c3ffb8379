// The Sessions view's filter, the pure part (no VS Code): which listed sessions a search's matches keep, and the
// line the view shows about it. Plain-Node unit tests: test/unit/filter.test.ts.
import { oneLine } from './format';
import type { Session } from './protocol';

/** A filter of the Sessions view: the sessions segue/search finds for a term. */
export interface SessionFilter {
  query: string;
  keys: Set<string>; // `runtime:id` of every matching session
  total: number;
}

export const sessionKey = (s: { runtime: string; id: string }) => `${s.runtime}:${s.id}`;

/** The listed sessions a filter keeps: the matching ones and their parents (a hit in a subagent shows under it). */
export function applyFilter(sessions: Session[], f: SessionFilter): Session[] {
  const byKey = new Map(sessions.map((s) => [sessionKey(s), s]));
  const keep = new Set<string>();
  for (const k of f.keys) {
    let s = byKey.get(k);
    while (s && !keep.has(sessionKey(s))) {
      keep.add(sessionKey(s));
      s = s.parent_id ? byKey.get(`${s.runtime}:${s.parent_id}`) : undefined;
    }
  }
  return sessions.filter((s) => keep.has(sessionKey(s)));
}

/** One line for the view: what it is filtered by, and how much of it matched. */
export function filterMessage(f: SessionFilter, shown: number): string {
  const q = oneLine(f.query, 60);
  if (shown === 0) {
    return `No session matches "${q}".`;
  }
  const more = f.total > f.keys.size ? ` (the first ${f.keys.size} of ${f.total} matches)` : '';
  return `Showing ${shown} session${shown === 1 ? '' : 's'} matching "${q}"${more}.`;
}
