// Plain-Node unit tests of the pure helpers (no VS Code needed): `npm run unit`.
import * as assert from 'node:assert/strict';
import {
  withFix, runtimeChoices, matchesWords, visiblePicks, age, clock, commandLine, confirmation, escapeIcons, fence, locationsLine, locationsMarkdown, mdCode, mdInline, oneLine, planDetail,
  reasonText, runtimeIcon, SEARCH_PLACEHOLDER, runtimeList, runtimeName, sessionDescription, sessionTitle, shortAge, terminalCommand, tildePath,
} from '../../src/format';
import { spawnSync } from 'node:child_process';
import { group, nest, SECTION_MIN } from '../../src/grouping';
import type { Plan, Session } from '../../src/protocol';
import { isPlan, PLAN_REASONS, RUNTIME_NAMES, RUNTIMES, TOKEN_PATTERN } from '../../src/protocol';

function session(over: Partial<Session>): Session {
  return {
    runtime: 'codex', id: 'x', title: null, first_request: null, cwd: null, branch: null, started_at: null,
    updated_at: null, model: null, parent_id: null, resumable: true, resume_blocker: null, live: false,
    handed_off: null, continues: null, subagent_count: 0, store_path: '/store/x.jsonl', problems: [], ...over,
  };
}

suite('format', () => {
  test('age buckets', () => {
    const now = Date.parse('2026-01-10T12:00:00.000Z');
    assert.equal(age('2026-01-10T11:59:30.000Z', now), 'just now');
    assert.equal(age('2026-01-10T11:55:00.000Z', now), '5 min ago');
    assert.equal(age('2026-01-10T09:00:00.000Z', now), '3 h ago');
    assert.equal(age('2026-01-08T12:00:00.000Z', now), '2 d ago');
    assert.equal(age('2025-10-01T00:00:00.000Z', now), '2025-10-01');
    assert.equal(age(null, now), '');
    assert.equal(age('garbage', now), '');
  });

  test('oneLine folds whitespace, drops control and bidi characters, caps length', () => {
    assert.equal(oneLine('a\n\tb\u202ec\u0007'), 'a bc');
    assert.equal(oneLine('x'.repeat(10), 5), 'xxxx…');
  });

  test('titles fall back to the first request, then (untitled), as the CLI table names them', () => {
    assert.equal(sessionTitle(session({ title: 'T', first_request: 'F' })), 'T');
    assert.equal(sessionTitle(session({ first_request: 'fix\nthe bug' })), 'fix the bug');
    assert.equal(sessionTitle(session({ id: 'abc' })), '(untitled)'); // never a bare id in a row's label
  });

  test('icons in untrusted text are escaped', () => {
    assert.equal(escapeIcons('run $(terminal) now'), 'run \\$(terminal) now');
  });

  test('tildePath only replaces a whole home prefix', () => {
    assert.equal(tildePath('/root/w', '/root'), '~/w');
    assert.equal(tildePath('/rootfs/w', '/root'), '/rootfs/w');
  });

  test('commandLine quotes for display', () => {
    assert.equal(commandLine(['claude', '--resume', 'a b', "it's"]), `claude --resume 'a b' 'it'\\''s'`);
  });

  test('fence outgrows backtick runs in the body', () => {
    assert.equal(fence('a ``` b'), '````text\na ``` b\n````\n');
    assert.equal(fence('plain\n'), '```text\nplain\n```\n');
  });

  test('mdInline neutralises Markdown syntax', () => {
    assert.equal(mdInline('[x](javascript:1) <b> *a* `c`'), '\\[x\\](javascript:1) \\<b\\> \\*a\\* \\`c\\`');
  });

  test('mdCode outgrows backtick runs and pads edge backticks', () => {
    assert.equal(mdCode('/tmp/a-b'), '`/tmp/a-b`');
    assert.equal(mdCode('a``b'), '```a``b```');
    assert.equal(mdCode('`x'), '`` `x ``');
    assert.equal(mdCode(null), '');
  });

  test('planDetail names mode, command, directory and hand-off', () => {
    const plan: Plan = {
      mode: 'new_session', reason: 'subagent', runtime: 'codex', argv: ['codex', 'read /tmp/b f.md'], cwd: '/w',
      brief_path: '/tmp/b f.md', session: { runtime: 'codex', id: 'i', title: 't' },
      handed_off: { surface: 'terminal', since: null, expires_at: null }, live: false,
    };
    const d = planDetail(plan, 0);
    assert.match(d, /Mode: new session \(a subagent cannot be reopened/);
    assert.match(d, /Command: codex 'read \/tmp\/b f\.md'/);
    assert.match(d, /Directory: \/w/);
    assert.match(d, /handed off via the terminal/);
  });

  test('the confirmation warns about a live session and its button says what it does', () => {
    const native: Plan = {
      mode: 'native', reason: 'native', runtime: 'claude', argv: ['claude', '--resume', 'i'], cwd: '/w',
      brief_path: null, session: { runtime: 'claude', id: 'i', title: 'fix it' }, handed_off: null, live: true,
    };
    assert.match(planDetail(native, 0), /Warning: another process has this session open \(● live\)\. Reopening it now runs two agents/);
    assert.deepEqual(confirmation(native), { question: 'Resume "fix it" in Claude Code, although another process has it open?', button: 'Resume Anyway', warn: true });
    assert.deepEqual(confirmation({ ...native, live: false }), { question: 'Resume "fix it" in Claude Code?', button: 'Resume', warn: false });
    assert.doesNotMatch(planDetail({ ...native, live: false }, 0), /Warning/);
    const fresh = { ...native, mode: 'new_session' as const, runtime: 'codex' as const, live: false };
    assert.deepEqual(confirmation(fresh), { question: 'Start a new Codex CLI session from the brief of "fix it"?', button: 'Start Session', warn: false });
    assert.equal(confirmation({ ...fresh, live: true }).button, 'Start Session Anyway');
    assert.match(planDetail({ ...fresh, live: true }, 0), /still has this session open/);
    assert.equal(confirmation({ ...fresh, handed_off: { surface: 'terminal', since: null, expires_at: null } }).button, 'Start Session Anyway');
  });

  test('a failure and its fix read as sentences', () => {
    assert.equal(withFix('spawn /opt/nope/python3 ENOENT', 'Install Python 3.10 or newer.'), 'spawn /opt/nope/python3 ENOENT. Install Python 3.10 or newer.');
    assert.equal(withFix('The directory does not exist: /x.', 'Restore it.'), 'The directory does not exist: /x. Restore it.');
    assert.equal(withFix('Segue failed: boom'), 'Segue failed: boom');
  });

  test('List Sessions matches typed words in any order, and offers to clear filters that hide every match', () => {
    const rows = [
      { label: '$(code) Plain task', description: 'OpenCode · main · 2 d ago', detail: '~/w · ses_1' },
      { label: '$(sparkle) Fix login', description: 'Claude Code · 1 h ago', detail: '~/app · 9f3' },
    ];
    assert.ok(matchesWords('$(code) Plain task OpenCode', 'opencode plain'));
    assert.ok(!matchesWords('$(code) Plain task', 'code plain'), 'icon names are not text');
    assert.deepEqual(visiblePicks(rows, 'opencode plain', undefined), [rows[0]]);
    assert.deepEqual(visiblePicks(rows, '  ', undefined), rows);
    assert.deepEqual(visiblePicks(rows, 'nothing here', undefined), []);
    const [clear] = visiblePicks(rows, 'nothing here', 'Codex CLI');
    assert.ok('clear' in clear && clear.label.includes('Clear the filters') && clear.description?.includes('"nothing here" in Codex CLI'));
  });

  test('Continue in: runtimes whose CLI is not installed come last, marked, with the install hint', () => {
    const clis = [
      { runtime: 'claude', installed: true, install: 'x' },
      { runtime: 'codex', installed: false, install: 'install Codex CLI: npm install -g @openai/codex' },
      { runtime: 'opencode', installed: true, install: 'x' },
      { runtime: 'cline', installed: false, install: 'install Cline: npm install -g cline' },
      { runtime: 'gemini', installed: true, install: 'x' },
    ];
    const got = runtimeChoices(RUNTIMES, 'claude', 'cline', clis);
    assert.deepEqual(got.map((c) => c.runtime), ['opencode', 'gemini', 'cline', 'codex']);
    assert.deepEqual(got[2], { runtime: 'cline', installed: false, description: 'default · not installed', detail: 'install Cline: npm install -g cline' });
    assert.equal(got[0].description, undefined);
    assert.deepEqual(runtimeChoices(RUNTIMES, 'claude', 'gemini', undefined).map((c) => c.runtime), ['gemini', 'codex', 'opencode', 'cline']);
  });

  test('runtime names, icons and plan reasons are the generated contract\'s', () => {
    assert.deepEqual([...RUNTIMES], Object.keys(RUNTIME_NAMES));
    assert.equal(runtimeName('cline'), 'Cline');
    assert.equal(runtimeName('claude'), 'Claude Code');
    assert.equal(runtimeName('emacs'), 'emacs'); // not registered: the id itself
    assert.equal(runtimeIcon('claude'), 'sparkle');
    assert.equal(runtimeIcon('toString'), 'comment-discussion');
    assert.equal(reasonText('native'), PLAN_REASONS.native);
    assert.equal(reasonText('toString'), 'toString'); // an own key only, never Object.prototype's
    const names = RUNTIMES.map((r) => RUNTIME_NAMES[r]);
    assert.equal(runtimeList(), `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`);
    assert.ok(runtimeList().startsWith('Claude Code, Codex CLI'));
  });

  test('a claim plan is a plan or a refusal', () => {
    assert.ok(!isPlan({ refused: 'missing_cli', message: 'm', runtime: 'cline', install: 'install Cline: npm install -g cline' }));
    assert.ok(isPlan({ mode: 'native', reason: 'native', runtime: 'codex', argv: ['codex'], cwd: '/w', brief_path: null,
      session: { runtime: 'codex', id: 'i', title: null }, handed_off: null, live: false }));
  });

  test('token pattern', () => {
    assert.ok(TOKEN_PATTERN.test('h_abc-DEF_123'));
    assert.ok(!TOKEN_PATTERN.test('h_'));
    assert.ok(!TOKEN_PATTERN.test('x_abc'));
    assert.ok(!TOKEN_PATTERN.test('h_abc def'));
  });
});

suite('grouping', () => {
  const a = session({ runtime: 'claude', id: 'a', cwd: '/ws/one', updated_at: '2026-01-01T00:00:03.000Z' });
  const a1 = session({ runtime: 'claude', id: 'a1', parent_id: 'a', cwd: '/ws/one', updated_at: '2026-01-01T00:00:02.000Z' });
  const b = session({ runtime: 'codex', id: 'b', cwd: '/elsewhere', updated_at: '2026-01-01T00:00:05.000Z' });
  const c = session({ runtime: 'codex', id: 'c', cwd: null, updated_at: '2026-01-01T00:00:01.000Z' });
  const orphan = session({ runtime: 'codex', id: 'o', parent_id: 'missing', updated_at: '2026-01-01T00:00:04.000Z' });

  test('subagents nest under their parent, orphans stay top level, newest first', () => {
    const roots = nest([a, a1, b, c, orphan]);
    assert.deepEqual(roots.map((n) => n.session.id), ['b', 'o', 'a', 'c']);
    assert.deepEqual(roots[2].children.map((n) => n.session.id), ['a1']);
  });

  test('a parent id in another runtime does not nest', () => {
    const x = session({ runtime: 'codex', id: 'a1', parent_id: 'a' });
    assert.deepEqual(nest([a, x]).map((n) => n.session.id).sort(), ['a', 'a1']);
  });

  test('by runtime: the runtime used last first, undated ones in runtime order', () => {
    assert.deepEqual(group([b, a, a1], 'runtime', []).map((x) => x.label), ['Codex CLI', 'Claude Code']);
    const newer = session({ runtime: 'claude', id: 'n', updated_at: '2026-01-02T00:00:00.000Z' });
    assert.deepEqual(group([b, a, newer], 'runtime', []).map((x) => x.label), ['Claude Code', 'Codex CLI']);
    const undated = [session({ runtime: 'codex', id: 'u1' }), session({ runtime: 'claude', id: 'u2' })];
    assert.deepEqual(group(undated, 'runtime', []).map((x) => x.label), ['Claude Code', 'Codex CLI']);
  });

  test('a big group shows date sections (Today, Yesterday, This week, Older); a small one none', () => {
    const now = new Date(2026, 0, 10, 9, 0, 0).getTime(); // local time, as the sections are
    const at = (d: number, h: number) => new Date(2026, 0, d, h, 0, 0).toISOString();
    const many = Array.from({ length: SECTION_MIN + 1 }, (_, i) =>
      session({ runtime: 'claude', id: `s${String(i).padStart(3, '0')}`, updated_at: i < 2 ? at(10, 8 - i) : i < 4 ? at(9, 23) : i < 6 ? at(4, 1) : at(3, 23) }),
    );
    many.push(session({ runtime: 'claude', id: 'undated' }));
    const [g] = group(many, 'runtime', [], now);
    assert.deepEqual(g.sections?.map((x) => [x.label, x.nodes.length]), [['Today', 2], ['Yesterday', 2], ['This week', 2], ['Older', SECTION_MIN - 4]]);
    assert.equal(g.sections?.[0].nodes[0].session.id, 's000', 'newest first inside a section');
    assert.ok(g.sections?.[3].nodes.some((n) => n.session.id === 'undated'));
    assert.equal(g.nodes.length, SECTION_MIN + 2);
    assert.equal(group(many.slice(0, SECTION_MIN), 'runtime', [], now)[0].sections, undefined);
  });

  test("Search Sessions' placeholder fits the quick pick (the trial saw it cut off at about 80 characters)", () => {
    assert.ok(SEARCH_PLACEHOLDER.length <= 60, SEARCH_PLACEHOLDER);
    assert.match(SEARCH_PLACEHOLDER, /"a phrase"/);
  });

  test('a missing directory is marked in the row', () => {
    const s = session({ runtime: 'claude', id: 'm', cwd: '/gone', updated_at: '2026-01-01T00:00:00.000Z' });
    assert.match(sessionDescription(s, 'runtime', Date.parse('2026-01-01T01:00:00.000Z'), '/root', true), /^directory missing {2}1h {2}\/gone/);
  });

  test('by workspace: folders first, then directories, unknown last', () => {
    const g = group([a, a1, b, c], 'workspace', ['/ws']);
    assert.deepEqual(g.map((x) => [x.kind, x.label]), [['folder', '/ws'], ['directory', '/elsewhere'], ['unknown', 'Unknown directory']]);
    assert.equal(g[0].nodes[0].children.length, 1);
  });

  test('a folder prefix is not a parent folder', () => {
    const g = group([session({ id: 'z', cwd: '/ws-other/x' })], 'workspace', ['/ws']);
    assert.equal(g[0].kind, 'directory');
  });
});

suite('editor surface text', () => {
  const now = Date.parse('2026-01-10T12:00:00.000Z');

  test('the description line reads like a row of segue list', () => {
    const s = session({ runtime: 'claude', cwd: '/root/w/one', branch: 'main', updated_at: '2026-01-10T09:00:00.000Z', subagent_count: 2 });
    assert.equal(sessionDescription(s, 'runtime', now, '/root'), '3h  ~/w/one  main  +2 subagents');
    assert.equal(sessionDescription(s, 'workspace', now, '/root'), '3h  Claude Code  main  +2 subagents');
    const marked = session({ live: true, handed_off: { surface: 'editor', since: null, expires_at: null }, updated_at: '2026-01-10T11:59:58.000Z' });
    assert.equal(sessionDescription(marked, 'runtime', now, '/root'), 'live, handed off  2s  ?  -');
    const sub = session({ parent_id: 'p', subagent_count: 1, updated_at: '2026-01-08T12:00:00.000Z' });
    assert.equal(sessionDescription(sub, 'runtime', now, undefined), '2d  ?  -');
  });

  test('clock and short ages', () => {
    assert.equal(clock(272.9), '4:32');
    assert.equal(clock(-3), '0:00');
    assert.equal(shortAge('2026-01-10T11:55:00.000Z', now), '5m');
    assert.equal(shortAge(null, now), '?');
  });

  test('where Segue looked: one line per runtime, the place that exists first; Markdown escapes paths', () => {
    const locs = [
      { runtime: 'claude', path: '/root/.claude/projects', exists: false, how_to_override: 'set CLAUDE_CONFIG_DIR' },
      { runtime: 'codex', path: '/root/.codex/sessions', exists: false, how_to_override: null },
      { runtime: 'codex', path: '/srv/codex', exists: true, how_to_override: null },
    ];
    assert.equal(locationsLine(locs, '/root'), 'No sessions found. Segue looked in Claude Code: ~/.claude/projects (not found); Codex CLI: /srv/codex.');
    const md = locationsMarkdown([...locs, { runtime: 'cline', path: '/x/`y`', exists: false, how_to_override: '*bold*' }]);
    assert.match(md, /^# Where Segue looked/);
    assert.match(md, /- `\/root\/.claude\/projects`: not found \(set CLAUDE\\_CONFIG\\_DIR\)/);
    assert.match(md, /- ``\s?\/x\/`y`\s?``: not found \(\\\*bold\\\*\)/);
    assert.equal(locationsLine([], undefined), 'No sessions found.');
  });

  test('where Segue looked: each place says how many sessions are listed from it', () => {
    const md = locationsMarkdown([
      { runtime: 'claude', path: '/root/.claude/projects', exists: true, how_to_override: null, sessions: 3 },
      { runtime: 'codex', path: '/root/.codex/sessions', exists: true, how_to_override: null, sessions: 1 },
      { runtime: 'codex', path: '/root/.codex/archived_sessions', exists: true, how_to_override: null, sessions: 0 },
      { runtime: 'gemini', path: '/root/.gemini/tmp', exists: false, how_to_override: null, sessions: 0 },
    ], '/root');
    assert.match(md, /## Claude Code \(3 sessions\)\n\n- `~\/.claude\/projects`: found, 3 sessions\n/);
    assert.match(md, /## Codex CLI \(1 session\)\n\n- `~\/.codex\/sessions`: found, 1 session\n- `~\/.codex\/archived\\?_sessions`: found, no sessions\n/);
    assert.match(md, /## Gemini CLI \(0 sessions\)\n\n- `~\/.gemini\/tmp`: not found\n/);
  });

  test('terminalCommand: a fixed sh script runs the argv verbatim and holds the terminal only on failure', () => {
    const argv = ['/bin/sh', '-c', 'printf "%s|" "$@"; exit "$1"', 'x', `it's "q" $(id)`];
    const fail = terminalCommand([...argv.slice(0, 3), 'x', '3', `it's "q" $(id)`], 'linux');
    assert.equal(fail.shellPath, '/bin/sh');
    assert.equal(fail.shellArgs[0], '-c');
    assert.ok(!fail.shellArgs[1].includes('it\'s'), 'the script holds no argv text');
    const r = spawnSync(fail.shellPath, fail.shellArgs, { input: '\n', encoding: 'utf8' });
    assert.equal(r.status, 3);
    assert.match(r.stdout, /^3\|it's "q" \$\(id\)\|/);
    assert.match(r.stdout, /sh exited with code 3\. Press Enter to close this terminal\./);
    const ok = terminalCommand([...argv.slice(0, 3), 'x', '0'], 'linux');
    const r0 = spawnSync(ok.shellPath, ok.shellArgs, { input: '', encoding: 'utf8' });
    assert.equal(r0.status, 0);
    assert.doesNotMatch(r0.stdout, /exited/);
    assert.deepEqual(terminalCommand(['C:\\bin\\codex.exe', 'resume', 'id'], 'win32'), { shellPath: 'C:\\bin\\codex.exe', shellArgs: ['resume', 'id'] });
  });
});
