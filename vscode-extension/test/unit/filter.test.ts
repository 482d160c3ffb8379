// Plain-Node unit tests of the Sessions view's filter: which listed sessions a search's matches keep.
import * as assert from 'node:assert/strict';
import { applyFilter, filterMessage, type SessionFilter } from '../../src/filter';
import type { Session } from '../../src/protocol';

function session(over: Partial<Session>): Session {
  return {
    runtime: 'codex', id: 'x', title: null, first_request: null, cwd: null, branch: null, started_at: null,
    updated_at: null, model: null, parent_id: null, resumable: true, resume_blocker: null, live: false,
    handed_off: null, continues: null, subagent_count: 0, store_path: '/s', problems: [], ...over,
  };
}

const filter = (keys: string[], total = keys.length): SessionFilter => ({ query: 'fix "the migration"', keys: new Set(keys), total });

suite('filter', () => {
  const listed = [
    session({ id: 'a' }),
    session({ id: 'b' }),
    session({ id: 'b-child', parent_id: 'b' }),
    session({ id: 'b-grandchild', parent_id: 'b-child' }),
    session({ runtime: 'claude', id: 'a' }), // the same id in another runtime is another session
  ];
  const ids = (ss: Session[]) => ss.map((s) => `${s.runtime}:${s.id}`);

  test('keeps the matching sessions, in listing order', () => {
    assert.deepEqual(ids(applyFilter(listed, filter(['claude:a', 'codex:a']))), ['codex:a', 'claude:a']);
    assert.deepEqual(ids(applyFilter(listed, filter(['codex:a']))), ['codex:a']);
  });

  test('a matching subagent keeps its parents, not its siblings', () => {
    assert.deepEqual(ids(applyFilter(listed, filter(['codex:b-grandchild']))), ['codex:b', 'codex:b-child', 'codex:b-grandchild']);
    assert.deepEqual(ids(applyFilter(listed, filter(['codex:b']))), ['codex:b']);
  });

  test('matches that are not listed, and no match, keep nothing', () => {
    assert.deepEqual(applyFilter(listed, filter(['opencode:gone'])), []);
    assert.deepEqual(applyFilter(listed, filter([])), []);
  });

  test('the line the view shows', () => {
    assert.equal(filterMessage(filter(['codex:a']), 1), 'Showing 1 session matching "fix "the migration"".');
    assert.equal(filterMessage(filter(['codex:a', 'codex:b'], 1500), 3), 'Showing 3 sessions matching "fix "the migration"" (the first 2 of 1500 matches).');
    assert.equal(filterMessage(filter([]), 0), 'No session matches "fix "the migration"".');
  });
});
