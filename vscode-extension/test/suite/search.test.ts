// Style B for search: segue/search from the extension host, and the Search Sessions command driven through its
// quick pick into the same session menu as List Sessions.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { SegueApi } from '../../src/extension';
import type { SessionFilter } from '../../src/filter';
import { PROGRESS_DELAY_MS, type ProgressReport } from '../../src/server';
import type { TreeNode } from '../../src/tree';

interface Context {
  fixtures: { runtime: string; sessions: { id: string; scenario?: string; parent_id: string | null }[] }[];
}

const ctx = JSON.parse(fs.readFileSync(process.env.SEGUE_TEST_CONTEXT ?? '', 'utf8')) as Context;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SECRET = 'Sup3rS3cret-42';

let api: SegueApi;

suite('Segue search', () => {
  suiteSetup(async () => {
    api = await vscode.extensions.getExtension<SegueApi>('segue.segue')!.activate();
  });

  test('search: a request, a command and a message each find their sessions in every fixture runtime', async () => {
    const want = ctx.fixtures
      .flatMap((f) => f.sessions.filter((s) => s.scenario === 'one').map((s) => `${f.runtime}:${s.id}`))
      .sort();
    assert.ok(want.length > 0, 'the fixtures hold the "one" scenario');
    let first = true;
    for (const query of ['"write what happened"', 'ls /nonexistent-dir', '"directory does not exist"']) {
      // the suite's first search fills the index: its work-done reports reach the caller until the reply
      const reports: ProgressReport[] = [];
      const r = await api.server.request('segue/search', { query, limit: 100 }, undefined, (p) => reports.push(p));
      const got = new Set(r.results.map((x) => `${x.runtime}:${x.id}`));
      assert.deepEqual(want.filter((k) => !got.has(k)), [], `every runtime found by ${query}`);
      assert.ok(r.results.every((x) => x.snippet.includes('«')), 'snippets mark the match');
      if (first) {
        const shown = JSON.stringify(reports);
        assert.ok(reports.length > 0, 'the first search reported its indexing');
        assert.ok(reports.every((x) => /^indexing sessions for search \d+\/\d+$/.test(x.message ?? '')), shown);
        const pct = reports.map((x) => x.percentage ?? -1);
        assert.deepEqual(pct, [...pct].sort((a, b) => a - b), `percentages only grow: ${shown}`);
        const n = reports.length;
        await sleep(300); // a $/progress that came after the reply would land now
        assert.equal(reports.length, n, 'no report after the reply');
        first = false;
      }
    }
  });

  test('search: no secret next to the phrase comes back', async () => {
    const r = await api.server.request('segue/search', { query: '"database password"', limit: 100 });
    assert.ok(r.total > 0);
    assert.ok(!JSON.stringify(r).includes(SECRET));
  });

  test('Sessions view filter: only the matching sessions (parents of matching subagents), the term shown, cleared', async () => {
    const all = await shownSessions();
    const f = (await vscode.commands.executeCommand('segue.filterSessions', 'nonexistent-dir')) as SessionFilter | undefined;
    try {
      assert.ok(f && f.keys.size > 0, 'the filter term matches sessions');
      const shown = await shownSessions();
      assert.ok(shown.length > 0 && shown.length < all.length, `the filter hides sessions (${shown.length} of ${all.length})`);
      const listed = await api.tree.load();
      const key = (s: { runtime: string; id: string }) => `${s.runtime}:${s.id}`;
      for (const s of listed.filter((x) => f.keys.has(key(x)))) {
        assert.ok(shown.includes(key(s)), `${key(s)} matches and is shown`);
      }
      const parents = new Set(listed.filter((x) => f.keys.has(key(x)) && x.parent_id).map((x) => `${x.runtime}:${x.parent_id}`));
      for (const k of shown) {
        assert.ok(f.keys.has(k) || parents.has(k), `${k} is shown only because it (or a subagent of it) matches`);
      }
      assert.match(api.tree.view?.description ?? '', /nonexistent-dir/);
      assert.match(api.tree.view?.message ?? '', /matching "nonexistent-dir"/);
      const none = (await vscode.commands.executeCommand('segue.filterSessions', 'xylophonist-zz')) as SessionFilter;
      assert.equal(none.keys.size, 0);
      assert.deepEqual(await shownSessions(), []);
      assert.match(api.tree.view?.message ?? '', /No session matches "xylophonist-zz"/);
    } finally {
      await vscode.commands.executeCommand('segue.clearFilter');
    }
    assert.equal(api.tree.filter, undefined);
    assert.deepEqual(await shownSessions(), all, 'clearing the filter shows every session again');
    assert.equal(api.tree.view?.description, undefined);
  });

  test("Sessions view: a slow request's progress replaces the view's message, a quick one's never shows", async () => {
    await shownSessions(); // the view has loaded and shows its own message (none, or a filter's)
    const before = api.tree.view?.message;
    const quick = api.tree.progress('Filtering');
    quick.report({ message: 'indexing sessions for search 1/2', percentage: 50 });
    assert.equal(api.tree.view?.message, before, 'nothing shows before PROGRESS_DELAY_MS');
    quick.done();
    const slow = api.tree.progress('Filtering');
    await sleep(PROGRESS_DELAY_MS + 50);
    slow.report({ message: 'indexing sessions for search 1/2', percentage: 50 });
    assert.equal(api.tree.view?.message, 'Filtering: indexing sessions for search 1/2');
    const scan = api.tree.progress();
    await sleep(PROGRESS_DELAY_MS + 50);
    scan.report({ message: 'reading codex sessions: 50 read, 50/70 sources', percentage: 20 });
    assert.equal(api.tree.view?.message, 'Reading codex sessions: 50 read, 50/70 sources');
    scan.done();
    slow.done();
    slow.report({ message: 'indexing sessions for search 2/2', percentage: 100 });
    assert.equal(api.tree.view?.message, before, "done: the view's own message again, and later reports are dropped");
  });

  test('Search Sessions: type, pick a result, and the session menu opens its brief', async () => {
    // briefs open rendered by default; the source view makes the opened document observable here
    const config = vscode.workspace.getConfiguration('segue');
    await config.update('briefView', 'source', vscode.ConfigurationTarget.Global);
    try {
      await openFromSearch();
    } finally {
      await config.update('briefView', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  test('Search Sessions with nothing typed lists the latest sessions; picking one opens its menu', async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const running = vscode.commands.executeCommand('segue.searchSessions');
    await sleep(1500); // the recent sessions come from one listing page
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'); // the newest session
    await sleep(800);
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'); // Open Brief
    const picked = (await running) as { runtime: string; id: string; parent_id?: string | null } | undefined;
    assert.ok(picked, 'a recent session was picked without typing');
    const newest = (await api.server.request('segue/listSessions', { limit: 1 })).sessions[0];
    assert.deepEqual({ runtime: picked.runtime, id: picked.id }, { runtime: newest.runtime, id: newest.id });
    const uri = `segue-brief:/${picked.runtime}/${encodeURIComponent(picked.id)}.md`;
    for (let i = 0; i < 100 && !vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri); i++) {
      await sleep(150);
    }
    assert.ok(vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri), 'its brief opened');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });
});

async function openFromSearch(): Promise<void> {
  {
    const running = vscode.commands.executeCommand('segue.searchSessions', 'nonexistent-dir');
    await sleep(2500); // debounce + the first search (the index may be filling)
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'); // the best result
    await sleep(800);
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'); // Open Brief
    const picked = (await running) as { runtime: string; id: string } | undefined;
    assert.ok(picked, 'a result was picked');
    const uri = `segue-brief:/${picked.runtime}/${encodeURIComponent(picked.id)}.md`;
    for (let i = 0; i < 100 && vscode.window.activeTextEditor?.document.uri.toString() !== uri; i++) {
      await sleep(150);
    }
    assert.equal(vscode.window.activeTextEditor?.document.uri.toString(), uri);
    assert.ok(vscode.window.activeTextEditor!.document.getText().includes('nonexistent-dir'));
  }
}

/** `runtime:id` of every session node the Sessions view shows (nested subagents included), in order. */
async function shownSessions(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (nodes: TreeNode[]) => {
    for (const n of nodes) {
      if (n.kind === 'session') {
        out.push(`${n.node.session.runtime}:${n.node.session.id}`);
      }
      await walk(await api.tree.getChildren(n));
    }
  };
  await walk(await api.tree.getChildren());
  return out;
}
