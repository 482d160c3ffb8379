// Style A: the packaged vsix in code-server, driven through headless Chromium like a person would.
// Usage: node e2e/ui.mjs   (after scripts/setup.sh). Prints "e2e-ui: N passed, M failed"; exit 1 on failure.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  budget, EXT, installVsix, ROOT, sleep, keepEvidence, launchBrowser, pageLog, prepareRun, readRecord, segueCli, startCodeServer, Steps,
  waitFor, writeSettings,
} from './lib.mjs';
import {
  activeEditorContains, activeEditorLines, activeTab, clickDialogButton, dialog, openQuickPick, pickRow, quickPick, quiet, rowsText,
  rowWith, runCommand, text,
} from './workbench.mjs';

const t0 = Date.now();
const r = prepareRun('ui');
const steps = new Steps('e2e-ui', r.dirs.shots);
const names = { claude: 'Claude Code', codex: 'Codex CLI', opencode: 'OpenCode', cline: 'Cline' };
const fold = (s) => (s ?? '').replace(/\s+/g, ' ').trim();
let server;
let browser;

try {
  if (!r.fixtures.length) throw new Error('no fixture stores under tests/fixtures/real/<runtime>/ (home/ + expected.json)');
  const expected = r.fixtures.flatMap((f) => (f.expected.sessions ?? []).filter((s) => !s.parent_id).map((s) => ({ ...s, runtime: f.runtime })));
  writeSettings(r);
  // A "running" Claude Code: a live process and the sessions/<pid>.json Claude writes while it runs.
  const liveSession = expected.find((s) => s.runtime === 'claude' && (s.subagent_ids ?? []).length) ?? expected.find((s) => s.runtime === 'claude');
  if (liveSession && r.env.CLAUDE_CONFIG_DIR) {
    const holder = spawn('sleep', ['900'], { detached: true, stdio: 'ignore' });
    holder.unref();
    process.on('exit', () => { try { process.kill(holder.pid); } catch {} });
    const procStart = fs.readFileSync(`/proc/${holder.pid}/stat`, 'utf8').split(') ')[1].split(' ')[19];
    fs.mkdirSync(path.join(r.env.CLAUDE_CONFIG_DIR, 'sessions'), { recursive: true });
    fs.writeFileSync(path.join(r.env.CLAUDE_CONFIG_DIR, 'sessions', `${holder.pid}.json`),
      JSON.stringify({ pid: holder.pid, sessionId: liveSession.id, cwd: liveSession.cwd, startedAt: Date.now(), procStart, kind: 'interactive' }));
  }
  installVsix(r, path.join(EXT, 'segue.vsix'));
  server = await startCodeServer(r);
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base });
  const page = await context.newPage();
  steps.page = page;
  steps.before = () => quiet(page);
  pageLog(page, path.join(r.run, 'page.log'));

  // What Segue lists, to navigate by title; assertions compare against expected.json (the runtime's facts).
  const listed = JSON.parse(segueCli(r, ['list', '--json', '--all']));
  const listing = Array.isArray(listed) ? listed : listed.sessions;
  const listed_ = (s) => listing.find((l) => l.runtime === s.runtime && l.id === s.id);
  const titleOf = (s) => fold(listed_(s)?.title ?? '').slice(0, 60);
  // Titles repeat (same scripted requests in every runtime, "Fake title" from the fake model): a row is
  // identified by the session id its detail line shows, plus title and directory.
  const short = (s) => s.id;
  const needles = (s) => [short(s), titleOf(s).slice(0, 30), s.cwd].filter(Boolean);
  const pick = (s) => pickRow(page, short(s), needles(s));
  const byScenario = (name) => expected.find((s) => s.scenario === name);
  const plain = byScenario('one') ?? expected.find((s) => listed_(s)?.resumable) ?? expected[0];
  const continued = expected.find((s) => s.continues) ?? expected[0];

  await steps.step('workbench loads and the extension activates', async () => {
    await page.goto(`${server.base}/?folder=${encodeURIComponent(r.dirs.ws)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    await page.locator('.statusbar').waitFor({ timeout: 60_000 });
    await waitFor('the activation marker', () => fs.existsSync(path.join(r.dirs.marker, 'activated')), 60_000);
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 450 } });
  });

  await steps.step('the server that runs is this checkout\'s code', async () => {
    await runCommand(page, 'Segue: List Sessions'); // its first request starts the server
    await quickPick(page, 'Segue sessions');
    await quiet(page);
    const m = await waitFor('the server marker', () => fs.existsSync(path.join(r.dirs.marker, 'server')) && JSON.parse(fs.readFileSync(path.join(r.dirs.marker, 'server'), 'utf8')), 60_000);
    const file = fs.realpathSync(m.segueFile);
    const mine = [path.join(ROOT, 'server'), path.join(EXT, 'bundled/libs'), path.join(r.dirs.ext)].map((d) => fs.realpathSync(fs.existsSync(d) ? d : ROOT));
    if (!mine.some((d) => file.startsWith(`${d}/`))) throw new Error(`the server imports segue from ${file}, not from this checkout (${ROOT})`);
  });

  await steps.step('List Sessions shows every fixture session with its directory and branch', async () => {
    await runCommand(page, 'Segue: List Sessions');
    await quickPick(page, 'Segue sessions');
    const first = await rowsText(page);
    if (!first.length) throw new Error('the list is empty');
    for (const s of expected) {
      const title = titleOf(s);
      if (!title) throw new Error(`Segue does not list ${s.runtime}:${s.id}`);
      await page.locator('.quick-input-widget input').fill(short(s));
      const row = rowWith(page, needles(s));
      await row.waitFor({ state: 'visible', timeout: 10_000 });
      const rowText = fold(await text(row));
      for (const want of [s.cwd, s.branch].filter(Boolean)) {
        if (!rowText.includes(want)) throw new Error(`row for ${s.runtime}:${s.id} lacks ${want}: ${rowText}`);
      }
    }
    await page.locator('.quick-input-widget input').fill('');
    await steps.shot('list-all');
    await quiet(page);
  });

  await steps.step('Search Sessions finds a command in every runtime, marks the match, and opens the menu', async () => {
    await runCommand(page, 'Segue: Search Sessions');
    const input = await quickPick(page, 'Search Segue sessions', { rows: false });
    // nothing typed: the latest sessions under a hint, not an empty list; a placeholder that fits
    await rowWith(page, ['Recent sessions']).waitFor({ state: 'visible', timeout: budget(20_000) });
    const ph = (await input.getAttribute('placeholder')) ?? '';
    if (!ph || ph.length > 60) throw new Error(`search placeholder: "${ph}"`);
    await steps.shot('search-empty');
    await input.fill('nonexistent-dir');
    const runtimes = [...new Set(expected.map((s) => s.runtime))];
    for (const rt of runtimes) {
      await rowWith(page, [names[rt], '«nonexistent-dir»']).waitFor({ state: 'visible', timeout: 60_000 });
    }
    const rows = (await rowsText(page)).map(fold);
    if (rows.some((t) => t.includes('Sup3rS3cret'))) throw new Error('a secret in a search row');
    await steps.shot('search');
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Open Brief' }).first().waitFor({ state: 'visible', timeout: 30_000 });
    await page.keyboard.press('Escape');
    await quiet(page);
  });

  await steps.step('the runtime filter narrows the list', async () => {
    const runtimes = [...new Set(expected.map((s) => s.runtime))];
    await runCommand(page, 'Segue: List Sessions');
    await quickPick(page, 'Segue sessions (all runtimes)');
    await page.locator('.quick-input-widget .action-label[aria-label="Filter by runtime"], .quick-input-widget a[title="Filter by runtime"]').first().click();
    await quickPick(page, 'Show sessions of');
    // Keep only the first runtime. Rows are recycled and may hold hidden text of earlier picks, so address
    // the checkboxes by their accessible names.
    await page.locator('.quick-input-header .monaco-checkbox[aria-label="Toggle all checkboxes"]').click();
    await page.locator(`.quick-input-list .monaco-list-row[aria-label$=" ${names[runtimes[0]]}"] .monaco-checkbox`).click();
    const ticked = await page.locator('.quick-input-list .monaco-list-row[aria-checked="true"]').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    if (ticked.length !== 1 || !ticked[0].endsWith(names[runtimes[0]])) throw new Error(`ticked: ${ticked.join(', ')}`);
    await page.locator('.quick-input-action .monaco-button', { hasText: 'OK' }).click();
    await quickPick(page, `Segue sessions (${names[runtimes[0]]})`);
    const rows = (await rowsText(page)).map(fold);
    const others = Object.values(names).filter((n) => n !== names[runtimes[0]]);
    if (!rows.length) throw new Error('no rows after filtering');
    // the description names the runtime ("Codex CLI · main · 2 d ago"); a title may name one too ("↪ continues Codex CLI session …")
    const leaked = rows.filter((t) => others.some((o) => t.includes(`${o} · `)));
    if (leaked.length) throw new Error(`other runtimes still listed: ${leaked[0]}`);
    await quiet(page);
  });

  // The Sessions view renders only the rows in sight, and groups come newest runtime first: scroll it, from the
  // top, until `row` shows.
  const scrollTo = async (tree, row, ms = 20_000) => {
    const end = Date.now() + budget(ms);
    for (;;) {
      await tree.hover();
      for (let i = 0; i < 10; i++) await page.mouse.wheel(0, -1000);
      for (let i = 0; i < 20; i++) {
        if (await row.isVisible()) return row;
        await page.mouse.wheel(0, 110);
        await sleep(200);
      }
      if (Date.now() > end) throw new Error(`no such row in the Sessions view: ${row}`);
    }
  };
  /** Scroll until `row` shows, then on to put it at the top of the view (the rows under it show too). */
  const scrollToTop = async (tree, row, ms) => {
    await scrollTo(tree, row, ms);
    const [t, b] = [await tree.boundingBox(), await row.boundingBox()];
    if (t && b && b.y > t.y) {
      await tree.hover();
      await page.mouse.wheel(0, b.y - t.y);
      await sleep(300);
    }
    return row;
  };
  const titleAction = (label) => page.locator(`.editor-group-container.active .editor-actions .action-label[aria-label^="${label}"]`).first();
  await steps.step('Open Brief shows the brief rendered, with its actions in the title bar', async () => {
    const s = plain;
    await runCommand(page, 'Segue: Open Brief');
    await quickPick(page, 'Open the brief of');
    await pick(s);
    await waitFor('the brief preview tab', async () => /^Preview/.test(await activeTab(page)) && (await activeTab(page)).includes(`${s.id}.md`), 30_000);
    const needle = fold(s.first_request).slice(0, 50);
    // Webviews live in nested iframes outside the editor's DOM: find the frame that shows the brief.
    const frame = await waitFor('the rendered brief', async () => {
      for (const f of page.frames()) {
        const t = await f.locator('body').innerText({ timeout: 1_000 }).catch(() => '');
        if (fold(t).includes(needle) && fold(t).includes('Segue handoff brief')) return f;
      }
      return undefined;
    }, 30_000);
    // Rendered, not source: headings and tables are elements, no Markdown pipes or fences shown.
    if (!(await frame.locator('h1').count()) || !(await frame.locator('table').count())) throw new Error('the preview has no heading or table element');
    if ((await frame.locator('body').innerText()).includes('| Runtime |')) throw new Error('the preview shows Markdown table source');
    for (const label of ['Resume This Session', 'Copy Resume Command of This Session', 'Hand Off (Emit Token)', 'Show Brief Source']) {
      await titleAction(label).waitFor({ state: 'visible', timeout: budget(15_000) });
    }
    await steps.shot('brief-rendered');
  });

  await steps.step('Show Brief Source: read-only Markdown with the actions as CodeLens', async () => {
    const s = plain;
    await titleAction('Show Brief Source').click();
    await waitFor('the brief source tab', async () => (await activeTab(page)) === `${s.id}.md`, 30_000);
    await waitFor('the brief text', async () => (await activeEditorLines(page)).length > 20, 30_000);
    const lens = page.locator('.editor-group-container.active .codelens-decoration');
    for (const t of ['Resume', 'Continue in another runtime', 'Hand off (emit token)', 'Copy resume command', 'Trace']) {
      await lens.locator('a', { hasText: t }).first().waitFor({ timeout: budget(20_000) });
    }
    const needle = fold(s.first_request).slice(0, 50);
    if (!(await activeEditorContains(page, needle))) throw new Error(`the brief does not contain "${needle}"`);
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+Home');
    await sleep(300);
    const before = await activeEditorLines(page);
    await page.keyboard.type('zz');
    await page.locator('.monaco-editor-overlaymessage', { hasText: 'Cannot edit in read-only editor' }).waitFor({ timeout: budget(10_000) });
    if ((await activeEditorLines(page)) !== before) throw new Error('the brief changed after typing');
    await steps.shot('brief-source-codelens');
  });

  await steps.step('Copy resume command (brief CodeLens) works when pasted into a fresh terminal', async () => {
    const s = plain;
    const cliLine = segueCli(r, ['resume', `${s.runtime}:${s.id}`, '--print']).trim();
    await page.locator('.editor-group-container.active .codelens-decoration a', { hasText: 'Copy resume command' }).first().click();
    const clip = await waitFor('the resume command on the clipboard', async () => {
      const c = await page.evaluate(() => navigator.clipboard.readText());
      return c.includes(' && ') ? c : undefined;
    }, 15_000);
    if (clip !== cliLine) throw new Error(`copied ${JSON.stringify(clip)}, the CLI prints ${JSON.stringify(cliLine)}`);
    if (!clip.startsWith(`cd ${s.cwd}`) && !clip.startsWith(`cd '${s.cwd}'`)) throw new Error(`does not cd to ${s.cwd}: ${clip}`);
    for (const f of fs.readdirSync(r.dirs.out).filter((x) => x.startsWith('resume-'))) fs.rmSync(path.join(r.dirs.out, f));
    // A fresh terminal in another directory; paste, Enter: the fake runtime records where and how it ran.
    await runCommand(page, 'Terminal: Create New Terminal');
    const xterm = page.locator('.terminal-wrapper.active .xterm, .terminal-wrapper .xterm').last();
    await xterm.waitFor({ timeout: budget(20_000) });
    await waitFor('a shell prompt', async () => /[$#]\s*$/m.test(await page.locator('.terminal-wrapper .xterm-rows').last().innerText()), 20_000);
    await xterm.click();
    await page.keyboard.insertText(clip);
    await page.keyboard.press('Enter');
    const file = path.join(r.dirs.out, `resume-${s.runtime}`);
    await waitFor('the pasted command to run the runtime', () => fs.existsSync(file), 30_000);
    const rec = readRecord(file);
    const want = JSON.parse(segueCli(r, ['resume', `${s.runtime}:${s.id}`, '--dry-run']));
    if (fs.realpathSync(rec.cwd) !== fs.realpathSync(want.cwd)) throw new Error(`ran in ${rec.cwd}, not ${want.cwd}`);
    if (JSON.stringify(rec.argv.slice(1)) !== JSON.stringify(want.argv.slice(1))) throw new Error(`argv ${JSON.stringify(rec.argv)} != plan ${JSON.stringify(want.argv)}`);
    await steps.shot('pasted-resume-command');
  });

  let plan;
  await steps.step('Resume Session confirms the plan and runs it in a terminal (argv and cwd recorded)', async () => {
    const s = plain;
    plan = JSON.parse(segueCli(r, ['resume', `${s.runtime}:${s.id}`, '--dry-run']));
    await runCommand(page, 'Segue: Resume Session');
    await quickPick(page, 'Resume');
    await pick(s);
    const box = await dialog(page);
    const shown = fold(await text(box));
    for (const want of ['Command:', `Directory: ${plan.cwd}`, path.basename(plan.argv[0])]) {
      if (!shown.includes(want)) throw new Error(`the confirmation lacks "${want}": ${shown}`);
    }
    await steps.shot('resume-confirm');
    await clickDialogButton(page, 'Resume');
    const file = path.join(r.dirs.out, `resume-${path.basename(plan.argv[0])}`);
    await waitFor('the fake runtime CLI record', () => fs.existsSync(file), 30_000);
    const rec = readRecord(file);
    if (fs.realpathSync(rec.cwd) !== fs.realpathSync(plan.cwd)) throw new Error(`cwd ${rec.cwd} != plan ${plan.cwd}`);
    if (JSON.stringify(rec.argv.slice(1)) !== JSON.stringify(plan.argv.slice(1))) {
      throw new Error(`argv ${JSON.stringify(rec.argv)} != plan ${JSON.stringify(plan.argv)}`);
    }
    if (rec.segueHome !== r.dirs.state) throw new Error(`terminal SEGUE_HOME ${rec.segueHome}`);
    await page.locator('.terminal-wrapper, .terminal-tabs-entry, .single-terminal-tab').first().waitFor({ timeout: 15_000 });
  });

  await steps.step('Resume Session on a live session warns in the confirmation and asks to resume anyway', async () => {
    if (!liveSession) throw new Error('the fixtures have no Claude Code session to hold live');
    await runCommand(page, 'Segue: Resume Session');
    await quickPick(page, 'Resume');
    await pick(liveSession);
    const box = await dialog(page);
    const shown = fold(await text(box));
    if (!/another process (still )?has this session open \(● live\)/.test(shown)) throw new Error(`no live warning: ${shown}`);
    const labels = (await box.locator('.dialog-buttons .monaco-button').allInnerTexts()).map((l) => l.trim());
    if (!labels.some((l) => /^(Resume|Start Session) Anyway$/.test(l)) || labels.includes('Resume')) throw new Error(`live confirmation buttons: ${labels.join('|')}`);
    await steps.shot('resume-live-confirm');
    await clickDialogButton(page, 'Cancel');
  });

  let token;
  await steps.step('Emit Handoff Token shows the token once, copies it, and the CLI claims it', async () => {
    const s = plain;
    await runCommand(page, 'Segue: Emit Handoff Token');
    await quickPick(page, 'Emit a handoff token for');
    await pick(s);
    const box = await dialog(page);
    const m = /h_[A-Za-z0-9_-]{20,}/.exec(await text(box));
    if (!m) throw new Error('no token in the dialog');
    token = m[0];
    const clip = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => `unreadable: ${e}`);
    if (clip !== token) throw new Error(`the clipboard does not hold the token (${String(clip).slice(0, 60)})`);
    await steps.shot('emit-dialog');
    // its dismiss button says Close: "Cancel" read as cancelling the token
    const labels = await box.locator('.dialog-buttons .monaco-button').allInnerTexts();
    if (labels.map((l) => l.trim()).sort().join('|') !== 'Close|Copy Again') throw new Error(`emit dialog buttons: ${labels.join('|')}`);
    await clickDialogButton(page, 'Close');
    // The listing now marks it as handed off.
    await runCommand(page, 'Segue: List Sessions');
    await quickPick(page, 'Segue sessions');
    await page.locator('.quick-input-widget input').fill(short(s));
    await rowWith(page, [...needles(s), 'handed off']).waitFor({ timeout: 15_000 });
    await steps.shot('handed-off-mark');
    await quiet(page);
    const claimed = JSON.parse(segueCli(r, ['handoff', 'claim', token, '--json']));
    if (claimed.session?.id !== s.id) throw new Error(`CLI claimed ${claimed.session?.id}, expected ${s.id}`);
    if (claimed.source_surface !== 'editor') throw new Error(`source_surface ${claimed.source_surface}`);
  });

  await steps.step('Claim Handoff Token opens the brief rendered in the active group, and offers Resume there and in a toast', async () => {
    const s = continued;
    const cliToken = segueCli(r, ['handoff', 'emit', `${s.runtime}:${s.id}`, '--from', 'terminal']).trim();
    const groups = await page.locator('.editor-group-container').count();
    await runCommand(page, 'Segue: Claim Handoff Token');
    const input = await quickPick(page, 'Claim a Segue handoff token', { rows: false });
    if ((await input.getAttribute('type')) !== 'password') throw new Error('the token input is not a password field');
    await input.fill('not-a-token');
    await page.locator('.quick-input-message', { hasText: 'h_' }).waitFor({ timeout: 5_000 });
    await input.fill(cliToken);
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Claimed the handoff' }).first();
    await toast.waitFor({ timeout: 15_000 });
    // One document, the brief, rendered (segue.briefView=preview) in the active group: no claim note, no split.
    await waitFor('the claimed brief preview', async () => /^Preview/.test(await activeTab(page)) && (await activeTab(page)).includes(`${s.id}.md`), 30_000);
    const now = await page.locator('.editor-group-container').count();
    if (now !== groups) throw new Error(`claiming changed the editor groups from ${groups} to ${now}`);
    const tabs = (await page.locator('.tabs-container .tab').allInnerTexts()).map(fold);
    if (tabs.some((t) => t.includes('handoff-'))) throw new Error(`a claim note opened: ${tabs.join(' | ')}`);
    if (tabs.filter((t) => t.includes(`${s.id}.md`)).length !== 1) throw new Error(`not one tab of the claimed brief: ${tabs.join(' | ')}`);
    // The brief's title bar keeps Resume after the toast goes (Continue in Another Runtime: its "..." menu).
    await titleAction('Resume This Session').waitFor({ state: 'visible', timeout: budget(15_000) });
    await steps.shot('claim-brief');
    // Offer to resume: the claim's own plan, confirmed, then run in a terminal.
    const before = fs.readdirSync(r.dirs.out).filter((f) => f.startsWith('resume-'));
    for (const f of before) fs.rmSync(path.join(r.dirs.out, f));
    await toast.locator('.monaco-button', { hasText: /^Resume$/ }).click();
    await dialog(page);
    await clickDialogButton(page, 'Resume');
    const file = path.join(r.dirs.out, `resume-${s.runtime}`);
    await waitFor('the resumed runtime to record its argv', () => fs.existsSync(file), 30_000);
    const rec = readRecord(file);
    if (!rec.argv.includes(s.id)) throw new Error(`resume argv lacks the session id: ${JSON.stringify(rec.argv)}`);
    if (fs.realpathSync(rec.cwd) !== fs.realpathSync(s.cwd)) throw new Error(`resumed in ${rec.cwd}, not ${s.cwd}`);
  });

  await steps.step('Trace Session shows the chain in the Trace view, each item opening its brief', async () => {
    const s = continued;
    await runCommand(page, 'Segue: Trace Session');
    await quickPick(page, 'Trace');
    await pick(s);
    const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /Trace/ }) }).first();
    const rows = pane.locator('.monaco-list-row');
    await rows.first().waitFor({ timeout: budget(20_000) });
    const texts = (await rows.allInnerTexts()).map(fold);
    const self = texts.findIndex((t) => t.includes('this session'));
    if (self < 0 || !texts[self].includes(titleOf(s).slice(0, 30))) throw new Error(`the chain does not mark the session: ${texts.join(' | ')}`);
    if (s.continues) {
      const from = { runtime: s.continues.runtime, id: s.continues.id };
      const i = texts.findIndex((t) => t.includes(titleOf(from).slice(0, 30)) && t.includes(names[from.runtime]));
      if (i < 0 || i >= self) throw new Error(`the continued ${from.runtime} session is not earlier in the chain: ${texts.join(' | ')}`);
      await steps.shot('trace-view');
      await rows.nth(i).click();
      await waitFor('the brief of the continued session', async () => (await activeTab(page)).includes(`${from.id}.md`), 30_000);
    } else {
      await steps.shot('trace-view');
    }
  });

  await steps.step('Resume in Another Runtime explains a missing CLI with its install command', async () => {
    const s = plain;
    // (the steps before started terminals, which may take the focus from the picker: openQuickPick reopens it)
    await openQuickPick(page, 'Segue: Resume in Another Runtime', 'Resume in another runtime');
    await pick(s);
    await quickPick(page, 'Continue');
    await pickRow(page, 'Cline', ['Cline']);
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'cline CLI is not installed' }).first();
    await toast.waitFor({ timeout: 20_000 });
    const t = fold(await text(toast));
    if (!/Install .*cline/i.test(t)) throw new Error(`no install hint: ${t}`);
    await toast.locator('.monaco-button', { hasText: 'Copy Install Command' }).first().click();
    const clip = await waitFor('the install command on the clipboard', async () => {
      const c = await page.evaluate(() => navigator.clipboard.readText());
      return /\bcline\b/.test(c) ? c : undefined;
    }, 10_000);
    if (/^install /i.test(clip)) throw new Error(`copied prose, not a command: ${clip}`);
  });

  await steps.step('Continue in Another Runtime writes its brief only once confirmed: Cancel leaves none behind', async () => {
    const s = plain;
    const other = s.runtime === 'codex' ? 'claude' : 'codex'; // both fake CLIs are installed
    const handoffs = path.join(r.dirs.state, 'handoffs');
    const briefs = () => (fs.existsSync(handoffs) ? fs.readdirSync(handoffs).filter((f) => f.endsWith('.md')) : []);
    const start = async () => {
      await quiet(page);
      await openQuickPick(page, 'Segue: Resume in Another Runtime', 'Resume in another runtime');
      await pick(s);
      await quickPick(page, 'Continue');
      await pickRow(page, names[other], [names[other]]);
      return dialog(page);
    };
    const before = briefs();
    await start();
    await clickDialogButton(page, 'Cancel');
    await sleep(500);
    const left = briefs().filter((f) => !before.includes(f));
    if (left.length) throw new Error(`a declined launch left a brief behind: ${left.join(', ')}`);
    const record = path.join(r.dirs.out, `resume-${other}`);
    fs.rmSync(record, { force: true });
    await start();
    await clickDialogButton(page, 'Start Session');
    await waitFor('the other runtime to record its argv', () => fs.existsSync(record), 30_000);
    const made = briefs().filter((f) => !before.includes(f));
    if (made.length !== 1) throw new Error(`briefs written on confirming: ${made.join(', ') || 'none'}`);
    const rec = readRecord(record);
    if (!rec.argv.some((a) => a.includes(path.join(handoffs, made[0])))) throw new Error(`the first prompt does not name ${made[0]}: ${JSON.stringify(rec.argv)}`);
  });

  await steps.step('Hand off from the brief: the view marks it, the status bar counts down, a click revokes it', async () => {
    const s = plain;
    await runCommand(page, 'Segue: Open Brief');
    await quickPick(page, 'Open the brief of');
    await pick(s);
    await waitFor('the brief preview tab', async () => /^Preview/.test(await activeTab(page)) && (await activeTab(page)).includes(`${s.id}.md`), 30_000);
    await titleAction('Hand Off (Emit Token)').click();
    const box = await dialog(page);
    const m = /h_[A-Za-z0-9_-]{20,}/.exec(await text(box));
    if (!m) throw new Error('no token in the dialog');
    await clickDialogButton(page, 'Close');
    const item = page.locator('.statusbar-item', { hasText: /1 handoff \d:\d\d/ }).first();
    await item.waitFor({ timeout: budget(20_000) });
    const t1 = fold(await text(item));
    await waitFor('the countdown to tick', async () => fold(await text(item)) !== t1, 10_000);
    // The Sessions view marks the handed-off session and the live one, each with its runtime's icon.
    const sessionsPane = page.locator('.sidebar .pane-header', { hasText: 'Sessions' }).first();
    if (!(await sessionsPane.isVisible())) await page.locator('.activitybar .action-item .action-label[aria-label^="Segue"]').first().click();
    const tree = page.locator('.pane-body .monaco-list[aria-label*="Sessions"], .pane-body .monaco-tl-tree').first();
    await scrollTo(tree, tree.locator('.monaco-list-row', { hasText: titleOf(s).slice(0, 30) }).filter({ hasText: 'handed off' }).first());
    if (liveSession) await scrollTo(tree, tree.locator('.monaco-list-row', { hasText: titleOf(liveSession).slice(0, 25) }).filter({ hasText: '● ' }).filter({ hasText: 'live' }).first());
    await steps.shot('status-bar-and-marks');
    await item.click();
    await quickPick(page, 'Handoff tokens from this editor');
    await rowWith(page, [titleOf(s).slice(0, 25)]).click();
    await quickPick(page, 'Handoff of');
    await pickRow(page, 'Revoke Token');
    await page.locator('.notifications-toasts .notification-toast', { hasText: 'Revoked the handoff token' }).first().waitFor({ timeout: budget(15_000) });
    await item.waitFor({ state: 'hidden', timeout: budget(15_000) });
    let refused = '';
    try { segueCli(r, ['handoff', 'claim', m[0], '--json']); } catch (e) { refused = String(e.stderr ?? e); }
    if (!/replaced|revoked/i.test(refused)) throw new Error(`the CLI still claims the revoked token: ${refused || 'claimed'}`);
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => undefined);
  });

  await steps.step('the Sessions view groups by runtime, nests subagents, and toggles to directories', async () => {
    if (!(await page.locator('.sidebar .pane-header', { hasText: 'Sessions' }).first().isVisible())) {
      await page.locator('.activitybar .action-item .action-label[aria-label^="Segue"]').first().click();
    }
    const tree = page.locator('.pane-body .monaco-list[aria-label*="Sessions"], .pane-body .monaco-tl-tree').first();
    await tree.waitFor({ timeout: 15_000 });
    const rowsNow = async () => (await tree.locator('.monaco-list-row').allInnerTexts()).map(fold);
    await tree.locator('.monaco-list-row').first().waitFor({ timeout: 20_000 });
    for (const rt of new Set(expected.map((x) => x.runtime))) {
      await scrollTo(tree, tree.locator('.monaco-list-row', { hasText: names[rt] }).first());
    }
    const parent = expected.find((x) => (x.subagent_ids ?? []).length);
    if (parent) {
      // the fixture runtimes share titles: the parent's directory (in its row) tells its runtime's row apart
      const row = tree.locator('.monaco-list-row').filter({ hasText: titleOf(parent).slice(0, 30) }).filter({ hasText: parent.cwd ?? '' })
        .filter({ has: page.locator('.monaco-tl-twistie.collapsible') }).first();
      await scrollToTop(tree, row, 10_000);
      const kids = parent.subagent_ids.map((id) => titleOf({ runtime: parent.runtime, id }).slice(0, 25)).filter(Boolean);
      await row.locator('.monaco-tl-twistie').click();
      for (const k of kids) await tree.locator('.monaco-list-row', { hasText: k }).first().waitFor({ timeout: 10_000 });
      // A nested row is indented deeper than its parent.
      const indent = async (loc) => (await loc.locator('.monaco-tl-indent').first().evaluate((el) => el.getBoundingClientRect().width));
      const child = tree.locator('.monaco-list-row', { hasText: kids[0] }).first();
      if (!((await indent(child)) > (await indent(row)))) throw new Error('the subagent is not nested under its parent');
    }
    await steps.shot('tree-by-runtime');
    if (parent && r.env.CODEX_HOME) {
      // A new session in a store: segue/sessionsChanged reloads the view in place; what was expanded stays.
      const codex = expected.find((x) => x.runtime === 'codex');
      const find = (dir) => { for (const e of fs.readdirSync(dir, { withFileTypes: true })) { const p = path.join(dir, e.name); const hit = e.isDirectory() ? find(p) : e.name.includes(codex.id) ? p : undefined; if (hit) return hit; } return undefined; };
      const src = find(path.join(r.env.CODEX_HOME, 'sessions'));
      await scrollToTop(tree, tree.locator('.monaco-list-row', { hasText: new RegExp(`^\\s*${names.codex}\\s*\\d+\\s*$`) }).first());
      const count = async () => tree.locator('.monaco-list-row', { hasText: titleOf(codex).slice(0, 25) }).count();
      const before = await count();
      const newId = `${codex.id.slice(0, -12)}0000feedbeef`;
      fs.writeFileSync(src.replace(codex.id, newId), fs.readFileSync(src, 'utf8').split(codex.id).join(newId));
      await waitFor('the new session in the view', async () => (await count()) > before, 30_000);
      const kid = parent.subagent_ids.map((id) => titleOf({ runtime: parent.runtime, id }).slice(0, 25)).find(Boolean);
      if (kid) await scrollTo(tree, tree.locator('.monaco-list-row', { hasText: kid }).first(), 10_000).catch(() => { throw new Error('the refresh collapsed the expanded parent'); });
      await steps.shot('tree-after-sessions-changed');
    }
    // View title actions show on hover.
    const toggle = page.locator('.action-label[aria-label^="Toggle Grouping"]').first();
    await page.locator('.sidebar .composite.title, .sidebar .pane-header').first().hover();
    await toggle.click();
    // Rows show directories in both modes now: wait for the grouping itself to change.
    const isRuntimeGroup = (t) => Object.values(names).includes(t.replace(/\s*\d+$/, ''));
    await waitFor('directory groups instead of runtime groups', async () => {
      const rows = await rowsNow();
      return rows.length > 0 && !rows.some(isRuntimeGroup) && rows.some((t) => /^\/tmp\/segue-fx\/[^ ]+\d+$/.test(t));
    }, 15_000).catch(async (e) => { throw new Error(`${e.message}; rows: ${(await rowsNow()).join(' | ')}`); });
  });

  await steps.step('Filter Sessions narrows the Sessions view to the matching sessions, names the term, and clears', async () => {
    const tree = page.locator('.pane-body .monaco-list[aria-label*="Sessions"], .pane-body .monaco-tl-tree').first();
    const rowsNow = async () => (await tree.locator('.monaco-list-row').allInnerTexts()).map(fold);
    const header = page.locator('.sidebar .pane-header', { hasText: 'Sessions' }).first();
    // the view renders only the rows in sight: compare from its top (the step before scrolled it)
    const fromTop = async () => {
      await tree.hover();
      for (let i = 0; i < 10; i++) await page.mouse.wheel(0, -1000);
      await sleep(200);
      return rowsNow();
    };
    const before = await fromTop();
    await header.hover();
    await page.locator('.action-label[aria-label^="Filter Sessions"]').first().click();
    const input = await quickPick(page, 'Filter the Sessions view', { rows: false });
    await input.fill('nonexistent-dir');
    await page.keyboard.press('Enter');
    await waitFor('the filter term in the view header', async () => (await text(header)).includes('filter: nonexistent-dir'), 30_000);
    await page.locator('.pane-body', { hasText: /Showing \d+ sessions? matching "nonexistent-dir"/ }).first().waitFor({ timeout: budget(30_000) });
    await waitFor('fewer rows than before', async () => { const n = (await rowsNow()).length; return n > 0 && n < before.length; }, 30_000)
      .catch(async (e) => { throw new Error(`${e.message}; rows: ${(await rowsNow()).join(' | ')}`); });
    await steps.shot('tree-filtered');
    await header.hover();
    await page.locator('.action-label[aria-label^="Clear Sessions Filter"]').first().click();
    await waitFor('every row back', async () => (await fromTop()).length === before.length && !(await text(header)).includes('filter:'), 30_000);
  });
} catch (e) {
  steps.results.push({ name: 'harness', ok: false, error: String(e?.stack ?? e) });
  console.log(`  ✘ harness: ${e?.stack ?? e}`);
  await steps.shot('harness-failure');
} finally {
  await browser?.close().catch(() => undefined);
  await server?.stop();
}

const { failed, line } = steps.summary();
fs.writeFileSync(path.join(r.run, 'results.json'), JSON.stringify(steps.results, null, 2));
const dest = keepEvidence(r, failed === 0);
console.log(`  evidence: ${path.relative(process.cwd(), dest)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
console.log(line);
process.exit(failed ? 1 : 0);
