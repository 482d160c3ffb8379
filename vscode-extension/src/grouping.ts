// How the Sessions view arranges a flat listing: groups (by runtime or by workspace), subagents under parents.
// Pure so it is unit-tested in Node and the tree provider stays a thin adapter.
import { RUNTIMES, type Session } from './protocol';
import { newestFirst, runtimeName, sortTime } from './format';

export type GroupMode = 'runtime' | 'workspace';

export interface SessionNode {
  session: Session;
  children: SessionNode[];
}

export interface Group {
  key: string;
  label: string;
  kind: 'runtime' | 'folder' | 'directory' | 'unknown';
  nodes: SessionNode[];
}

/** Subagents under their parent (same runtime); orphans stay top level. Newest first at every level. */
export function nest(sessions: Session[]): SessionNode[] {
  const byRef = new Map<string, SessionNode>();
  for (const s of sessions) {
    byRef.set(`${s.runtime}:${s.id}`, { session: s, children: [] });
  }
  const roots: SessionNode[] = [];
  for (const node of byRef.values()) {
    const pid = node.session.parent_id;
    const parent = pid ? byRef.get(`${node.session.runtime}:${pid}`) : undefined;
    if (parent && parent !== node) {
      parent.children.push(node);
    } else {
      roots.push(node);
    }
  }
  const sortDeep = (nodes: SessionNode[]): SessionNode[] => {
    nodes.sort((a, b) => newestFirst(a.session, b.session));
    nodes.forEach((n) => sortDeep(n.children));
    return nodes;
  };
  return sortDeep(roots);
}

function within(dir: string, folder: string): boolean {
  const f = folder.replace(/\/+$/, '');
  return dir === f || dir.startsWith(`${f}/`);
}

/** The workspace folder holding `dir` (deepest match wins for nested folders). */
export function folderOf(dir: string | null, folders: string[]): string | undefined {
  if (!dir) {
    return undefined;
  }
  return folders.filter((f) => within(dir, f)).sort((a, b) => b.length - a.length)[0];
}

export function group(sessions: Session[], mode: GroupMode, folders: string[]): Group[] {
  const roots = nest(sessions);
  const groups = new Map<string, Group>();
  const add = (key: string, label: string, kind: Group['kind'], node: SessionNode) => {
    let g = groups.get(key);
    if (!g) {
      g = { key, label, kind, nodes: [] };
      groups.set(key, g);
    }
    g.nodes.push(node);
  };
  for (const node of roots) {
    const s = node.session;
    if (mode === 'runtime') {
      add(`runtime:${s.runtime}`, runtimeName(s.runtime), 'runtime', node);
      continue;
    }
    const folder = folderOf(s.cwd, folders);
    if (folder) {
      add(`folder:${folder}`, folder, 'folder', node);
    } else if (s.cwd) {
      add(`dir:${s.cwd}`, s.cwd, 'directory', node);
    } else {
      add('unknown', 'Unknown directory', 'unknown', node);
    }
  }
  const list = [...groups.values()];
  if (mode === 'runtime') {
    const order = (g: Group) => {
      const i = (RUNTIMES as readonly string[]).indexOf(g.key.slice('runtime:'.length));
      return i < 0 ? RUNTIMES.length : i;
    };
    return list.sort((a, b) => order(a) - order(b) || a.label.localeCompare(b.label));
  }
  // Workspace folders first (in workspace order), then other directories by latest activity, unknown last.
  const rank = (g: Group) => (g.kind === 'folder' ? 0 : g.kind === 'directory' ? 1 : 2);
  const latest = (g: Group) => Math.max(0, ...g.nodes.map((n) => sortTime(n.session)));
  return list.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (a.kind === 'folder' ? folders.indexOf(a.label) - folders.indexOf(b.label) : latest(b) - latest(a)),
  );
}
