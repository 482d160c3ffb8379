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
  /** A big group's sessions by day (Today, Yesterday, This week, Older); absent for a small group. */
  sections?: Section[];
}

export interface Section {
  key: 'today' | 'yesterday' | 'week' | 'older';
  label: string;
  nodes: SessionNode[];
}

/** A group with more top-level sessions than this shows them in date sections. */
export const SECTION_MIN = 40;

const SECTIONS: { key: Section['key']; label: string }[] = [
  { key: 'today', label: 'Today' },
  { key: 'yesterday', label: 'Yesterday' },
  { key: 'week', label: 'This week' },
  { key: 'older', label: 'Older' },
];

/** Newest-first nodes split by local day of last activity: today, yesterday, the 5 days before, older
 * (no time recorded: older). Empty sections are left out; each keeps the nodes' order. */
export function sections(nodes: SessionNode[], now: number): Section[] {
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  const day = (back: number) => {
    const d = new Date(midnight);
    d.setDate(d.getDate() - back); // calendar days, so a DST change does not move the line
    return d.getTime();
  };
  const bounds: [Section['key'], number][] = [['today', day(0)], ['yesterday', day(1)], ['week', day(6)]];
  const out = new Map<Section['key'], SessionNode[]>();
  for (const n of nodes) {
    const t = sortTime(n.session);
    const key = (t > 0 && bounds.find(([, from]) => t >= from)?.[0]) || 'older';
    out.set(key, [...(out.get(key) ?? []), n]);
  }
  return SECTIONS.filter((x) => out.has(x.key)).map((x) => ({ ...x, nodes: out.get(x.key)! }));
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

export function group(sessions: Session[], mode: GroupMode, folders: string[], now = Date.now()): Group[] {
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
  for (const g of list) {
    if (g.nodes.length > SECTION_MIN) {
      g.sections = sections(g.nodes, now);
    }
  }
  const latest = (g: Group) => Math.max(0, ...g.nodes.map((n) => sortTime(n.session)));
  if (mode === 'runtime') {
    // The runtime used last comes first; runtimes with no dated session in the registry's order.
    const order = (g: Group) => {
      const i = (RUNTIMES as readonly string[]).indexOf(g.key.slice('runtime:'.length));
      return i < 0 ? RUNTIMES.length : i;
    };
    return list.sort((a, b) => latest(b) - latest(a) || order(a) - order(b) || a.label.localeCompare(b.label));
  }
  // Workspace folders first (in workspace order), then other directories by latest activity, unknown last.
  const rank = (g: Group) => (g.kind === 'folder' ? 0 : g.kind === 'directory' ? 1 : 2);
  return list.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (a.kind === 'folder' ? folders.indexOf(a.label) - folders.indexOf(b.label) : latest(b) - latest(a)),
  );
}
