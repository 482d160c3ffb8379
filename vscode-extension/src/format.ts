// Pure text helpers (no vscode import): labels, ages, Markdown quoting, plan descriptions.
// Runtime names, icons and plan-reason texts come from the generated contract (the server's registry).
import {
  type HandedOff,
  isRuntime,
  type Location,
  PLAN_REASONS,
  type Plan,
  RUNTIME_ICONS,
  RUNTIME_NAMES,
  RUNTIMES,
  type Session,
} from './protocol';

/** A failure's message and its fix as sentences: a full stop after a message that ends without one. */
export function withFix(message: string, fix?: string): string {
  if (!fix) {
    return message;
  }
  return `${/[.!?:]$/.test(message.trim()) ? message.trim() : `${message.trim()}.`} ${fix}`;
}

/** Quick-pick filtering: every word of `query` somewhere in `text`, in any order, case-insensitive
 * ("opencode plain" finds "Plain task · OpenCode"). `$(icon)` names in the text do not count. */
export function matchesWords(text: string, query: string): boolean {
  const hay = text.replace(/\$\([a-z0-9-~]+\)/gi, ' ').toLowerCase();
  return query.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w));
}

interface PickText {
  label: string;
  description?: string;
  detail?: string;
}
/** The row shown when filters hide every match: picking it clears them. */
export interface ClearPick extends PickText {
  alwaysShow: true;
  clear: true;
}

/** The rows for what was typed: every word in the row's label, description or detail, in any order; when
 * nothing matches and filters are set, one row that clears them. */
export function visiblePicks<T extends PickText>(all: T[], query: string, filtered: string | undefined): (T | ClearPick)[] {
  const shown = all.filter((p) => matchesWords(`${p.label} ${p.description ?? ''} ${p.detail ?? ''}`, query));
  if (shown.length || !filtered) {
    return shown;
  }
  const typed = query.trim() ? ` "${oneLine(query, 40)}"` : '';
  return [{ label: '$(clear-all) Clear the filters', description: `no session${typed} in ${filtered}`, alwaysShow: true, clear: true }];
}

/** The "Continue in" choices: runtimes other than the session's, installed ones first (the preferred one
 * leading), then the ones whose CLI is not installed here, marked so with how to install them. */
export function runtimeChoices(
  runtimes: readonly string[],
  current: string | undefined,
  preferred: string | undefined,
  clis: { runtime: string; installed: boolean; install: string }[] | undefined,
): { runtime: string; installed: boolean; description?: string; detail?: string }[] {
  const info = new Map((clis ?? []).map((c) => [c.runtime, c]));
  const installed = (rt: string) => info.get(rt)?.installed ?? true; // unknown: as before, no mark
  return runtimes
    .filter((r) => r !== current)
    .map((rt, i) => ({ rt, i }))
    .sort((a, b) => Number(installed(b.rt)) - Number(installed(a.rt)) || Number(b.rt === preferred) - Number(a.rt === preferred) || a.i - b.i)
    .map(({ rt }) => {
      const ok = installed(rt);
      return {
        runtime: rt,
        installed: ok,
        description: [rt === preferred ? 'default' : '', ok ? '' : 'not installed'].filter(Boolean).join(' · ') || undefined,
        detail: ok ? undefined : info.get(rt)?.install,
      };
    });
}

/** A runtime's display name; the id itself for one this build does not know. */
export function runtimeName(runtime: string): string {
  return isRuntime(runtime) ? RUNTIME_NAMES[runtime] : runtime;
}

export function runtimeIcon(runtime: string): string {
  return isRuntime(runtime) ? RUNTIME_ICONS[runtime] : 'comment-discussion';
}

/** "A, B, C or D": the display names of every runtime, in the registry's order. */
export function runtimeList(conjunction = 'or'): string {
  const names = RUNTIMES.map((r) => RUNTIME_NAMES[r]);
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} ${conjunction} ${names[names.length - 1]}`;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

/** One line of untrusted text for a label: control and bidi characters out, whitespace folded, capped. */
export function oneLine(text: string | null | undefined, max = 120): string {
  if (!text) {
    return '';
  }
  const flat = text.replace(/\s+/g, ' ').replace(CONTROL, '').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Quick-pick labels render `$(name)` as icons; session text must not inject any. */
export function escapeIcons(text: string): string {
  return text.replace(/\$\(/g, '\\$(');
}

export function sessionTitle(s: Pick<Session, 'title' | 'first_request' | 'id'>, max = 120): string {
  return oneLine(s.title, max) || oneLine(s.first_request, max) || '(untitled)';
}

/** Search Sessions' placeholder: short enough for the quick pick's width (a longer one was cut off). */
export const SEARCH_PLACEHOLDER = 'Words or "a phrase" from requests, replies, commands';

/** Above the recent sessions an empty search shows. */
export const RECENT_LABEL = 'Recent sessions · type to search all of them';

export function tildePath(p: string | null | undefined, home: string | undefined): string {
  if (!p) {
    return '';
  }
  if (home && (p === home || p.startsWith(home.endsWith('/') ? home : `${home}/`))) {
    return `~${p.slice(home.replace(/\/$/, '').length)}`;
  }
  return p;
}

export function parseIso(s: string | null | undefined): number | undefined {
  if (!s) {
    return undefined;
  }
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}

/** Human age of an ISO time relative to `now` (ms): "just now", "5 min ago", "3 h ago", "2 d ago", a date. */
export function age(iso: string | null | undefined, now: number): string {
  const t = parseIso(iso);
  if (t === undefined) {
    return '';
  }
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) {
    return 'just now';
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ago`;
  }
  if (s < 30 * 86400) {
    return `${Math.floor(s / 86400)} d ago`;
  }
  return new Date(t).toISOString().slice(0, 10);
}

export function sortTime(s: Pick<Session, 'updated_at' | 'started_at'>): number {
  return parseIso(s.updated_at) ?? parseIso(s.started_at) ?? 0;
}

/** Newest first; ties broken by id so the order is stable. */
export function newestFirst<T extends Pick<Session, 'updated_at' | 'started_at' | 'id'>>(a: T, b: T): number {
  return sortTime(b) - sortTime(a) || a.id.localeCompare(b.id);
}

export function handedOffText(h: HandedOff | null, now: number): string {
  if (!h) {
    return '';
  }
  const until = parseIso(h.expires_at);
  const left = until === undefined ? '' : `, token valid ${Math.max(0, Math.round((until - now) / 60000))} min more`;
  return `handed off via the ${h.surface}${h.since ? ` ${age(h.since, now)}` : ''}${left}`;
}

export function marks(s: Pick<Session, 'live' | 'handed_off'>): string[] {
  const out: string[] = [];
  if (s.live) {
    out.push('live');
  }
  if (s.handed_off) {
    out.push('handed off');
  }
  return out;
}

/** POSIX shell quoting, for showing a command to a person (never executed as a string). */
export function shQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function commandLine(argv: string[]): string {
  return argv.map(shQuote).join(' ');
}

export function reasonText(reason: string): string {
  return Object.hasOwn(PLAN_REASONS, reason) ? PLAN_REASONS[reason as keyof typeof PLAN_REASONS] : reason;
}

/** The body of the resume confirmation: everything a person needs to decide, one fact per line. */
export function planDetail(plan: Plan, now: number): string {
  const lines = [
    `Mode: ${plan.mode === 'native' ? 'native resume' : 'new session'} (${reasonText(plan.reason)})`,
    `Runtime: ${runtimeName(plan.runtime)}`,
    `Command: ${commandLine(plan.argv)}`,
    `Directory: ${plan.cwd}`,
  ];
  if (plan.brief_path) {
    lines.push(`Brief: ${plan.brief_path}`);
  }
  if (plan.live) {
    lines.push('', liveWarning(plan));
  }
  if (plan.handed_off) {
    lines.push('', `This session was ${handedOffText(plan.handed_off, now)}: it may already continue elsewhere.`);
  }
  return lines.join('\n');
}

/** The warning for a session another process has open (as `segue resume` words it). */
export function liveWarning(plan: Pick<Plan, 'mode'>): string {
  return plan.mode === 'native'
    ? 'Warning: another process has this session open (● live). Reopening it now runs two agents on one session; finish or close the other one first.'
    : 'Warning: another process still has this session open (● live); the new session starts from the brief as it is now.';
}

/** The confirmation's question and its button: what the button does ("Resume", "Start Session"), "Anyway"
 * when the session is live or handed off. */
export function confirmation(plan: Pick<Plan, 'mode' | 'runtime' | 'live' | 'handed_off' | 'session'>): { question: string; button: string; warn: boolean } {
  const title = oneLine(plan.session.title, 80) || plan.session.id;
  const warn = plan.live || plan.handed_off !== null;
  const base = plan.mode === 'native' ? 'Resume' : 'Start Session';
  const question =
    plan.mode === 'native'
      ? `Resume "${title}" in ${runtimeName(plan.runtime)}${plan.live ? ', although another process has it open' : ''}?`
      : `Start a new ${runtimeName(plan.runtime)} session from the brief of "${title}"?`;
  return { question, button: warn ? `${base} Anyway` : base, warn };
}

/** Terminal names come from session titles: one short line. */
export function terminalName(title: string | null, ref: { id: string }): string {
  return `Segue: ${oneLine(title, 40) || ref.id.slice(0, 12)}`;
}

/** A fixed script (never session text): runs "$0" "$@"; on a non-zero exit says so and waits for Enter. */
export const HOLD_ON_FAILURE =
  '"$0" "$@"; rc=$?; if [ "$rc" -ne 0 ]; then printf \'\\n[Segue] %s exited with code %d. Press Enter to close this terminal.\' "${0##*/}" "$rc"; read -r _; fi; exit "$rc"';

/** The terminal's process for a plan's argv: on POSIX, /bin/sh running HOLD_ON_FAILURE with the argv as its
 * arguments (so a failing agent's output stays); elsewhere the argv itself. */
export function terminalCommand(argv: string[], platform: string): { shellPath: string; shellArgs: string[] } {
  if (platform === 'win32') {
    return { shellPath: argv[0], shellArgs: argv.slice(1) };
  }
  return { shellPath: '/bin/sh', shellArgs: ['-c', HOLD_ON_FAILURE, ...argv] };
}

// --- Markdown for untrusted text (CommonMark): fences longer than any backtick run inside, escaped inlines.

export function fence(body: string, info = 'text'): string {
  const longest = Math.max(0, ...(body.match(/`+/g) ?? []).map((r) => r.length));
  const bar = '`'.repeat(Math.max(3, longest + 1));
  const text = body.replace(/\r\n?/g, '\n').replace(/\u0000/g, '\ufffd');
  return `${bar}${info}\n${text}${text.endsWith('\n') ? '' : '\n'}${bar}\n`;
}

/**
 * One-line inline prose with the characters escaped that could open emphasis, code, links, images, HTML,
 * tables or math. Always used mid-line, so line-start syntax (headings, lists) cannot trigger.
 */
export function mdInline(text: string | null | undefined, max = 200): string {
  return oneLine(text, max).replace(/[\\`*_[\]<>&!|~$]/g, (c) => `\\${c}`);
}

/** Ids and paths as a code span: fence longer than any backtick run inside, padded when needed. */
export function mdCode(text: string | null | undefined, max = 500): string {
  const t = oneLine(text, max);
  if (!t) {
    return '';
  }
  const bar = '`'.repeat(Math.max(0, ...(t.match(/`+/g) ?? []).map((r) => r.length)) + 1);
  const pad = t.startsWith('`') || t.endsWith('`') ? ' ' : '';
  return `${bar}${pad}${t}${pad}${bar}`;
}

/** A short age like the CLI table's AGE column: "45s", "5m", "3h", "2d". */
export function shortAge(iso: string | null | undefined, now: number): string {
  const t = parseIso(iso);
  if (t === undefined) {
    return '?';
  }
  const s = Math.max(0, Math.floor((now - t) / 1000));
  for (const [unit, secs] of [['d', 86400], ['h', 3600], ['m', 60]] as const) {
    if (s >= secs) {
      return `${Math.floor(s / secs)}${unit}`;
    }
  }
  return `${s}s`;
}

/**
 * The Sessions view's description line, read like a row of `segue list`: marks (live, handed off; the label
 * leads with ● / ⇄), age,
 * then the columns the grouping does not already show (directory and branch by runtime; runtime and branch
 * by workspace), then the subagent count.
 */
export function sessionDescription(
  s: Pick<Session, 'live' | 'handed_off' | 'updated_at' | 'started_at' | 'cwd' | 'branch' | 'runtime' | 'subagent_count' | 'parent_id'>,
  mode: 'runtime' | 'workspace',
  now: number,
  home: string | undefined,
  dirMissing = false,
): string {
  const marks = [s.live ? 'live' : '', s.handed_off ? 'handed off' : '', dirMissing ? 'directory missing' : ''].filter(Boolean).join(', ');
  const cols =
    mode === 'runtime'
      ? [shortAge(s.updated_at ?? s.started_at, now), oneLine(tildePath(s.cwd, home), 60) || '?', oneLine(s.branch, 30) || '-']
      : [shortAge(s.updated_at ?? s.started_at, now), runtimeName(s.runtime), oneLine(s.branch, 30) || '-'];
  const subs = s.subagent_count && !s.parent_id ? `+${s.subagent_count} subagent${s.subagent_count === 1 ? '' : 's'}` : '';
  return [marks, cols.join('  '), subs].filter(Boolean).join('  ');
}

/** Minutes and seconds left: "4:05"; "0:00" once expired. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export type LookedAt = Pick<Location, 'path' | 'exists' | 'how_to_override'> & { runtime: string; sessions?: number };

/** "Where Segue looked": one line per place, grouped by runtime, with the sessions listed from it and the
 * variable that moves it. */
export function locationsMarkdown(locs: LookedAt[], home?: string): string {
  const out = ['# Where Segue looked for sessions', '', 'Each runtime keeps its sessions in its own local store; Segue only reads them.', ''];
  const count = (n: number) => `${n} session${n === 1 ? '' : 's'}`;
  for (const rt of [...new Set(locs.map((l) => l.runtime))]) {
    const mine = locs.filter((x) => x.runtime === rt);
    const total = mine.reduce((n, l) => n + (l.sessions ?? 0), 0);
    out.push(`## ${mdInline(runtimeName(rt))}${mine.some((l) => l.sessions !== undefined) ? ` (${count(total)})` : ''}`, '');
    for (const l of mine) {
      const how = l.how_to_override ? ` (${mdInline(l.how_to_override)})` : '';
      const what = !l.exists ? 'not found' : l.sessions === undefined ? 'found' : l.sessions ? `found, ${count(l.sessions)}` : 'found, no sessions';
      out.push(`- ${mdCode(tildePath(l.path, home))}: ${what}${how}`);
    }
    out.push('');
  }
  out.push('Point the runtimes elsewhere with those variables (then restart the server), or open the demo sample.');
  return `${out.join('\n')}\n`;
}

/** One line for the view's message: the main place of each runtime and whether it exists. */
export function locationsLine(locs: LookedAt[], home: string | undefined): string {
  const first = new Map<string, LookedAt>();
  for (const l of locs) {
    const had = first.get(l.runtime);
    if (!had || (!had.exists && l.exists)) {
      first.set(l.runtime, l);
    }
  }
  const parts = [...first.values()].map((l) => `${runtimeName(l.runtime)}: ${tildePath(l.path, home)}${l.exists ? '' : ' (not found)'}`);
  return parts.length ? `No sessions found. Segue looked in ${parts.join('; ')}.` : 'No sessions found.';
}
