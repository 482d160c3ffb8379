// package.json as a new user meets it in the command palette and the settings editor (plain Node).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

interface Manifest {
  categories: string[];
  contributes: {
    commands: { command: string; title: string }[];
    menus: Record<string, { command: string; when?: string }[]>;
    configuration: { properties: Record<string, { scope?: string; enum?: string[]; enumItemLabels?: string[] }> };
  };
}
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as Manifest;
const palette = (id: string) => manifest.contributes.menus.commandPalette.find((e) => e.command === id)?.when;

suite('manifest', () => {
  test('the brief-only twins of session commands stay out of the command palette, and keep their menus', () => {
    for (const id of ['segue.brief.resume', 'segue.brief.continueIn', 'segue.brief.handOff', 'segue.brief.copyResume']) {
      assert.equal(palette(id), 'false', `${id} is hidden from the palette`);
      assert.ok(manifest.contributes.menus['editor/title'].some((e) => e.command === id), `${id} stays in the brief's title bar`);
    }
    const titles = manifest.contributes.commands.filter((c) => palette(c.command) !== 'false').map((c) => c.title);
    for (const pair of [['Resume Session', 'Resume This Session'], ['Copy Resume Command', 'Copy Resume Command of This Session']]) {
      assert.ok(titles.includes(pair[0]) && !titles.includes(pair[1]), `${pair[1]} is not beside ${pair[0]}`);
    }
  });

  test('Refresh Brief (Session Grew) shows only when the active brief grew', () => {
    assert.match(palette('segue.brief.refresh') ?? '', /segue\.activeBriefStale/);
  });

  test('settings: the default runtime has no blank entry; state dir and Python show outside the Remote tab', () => {
    const props = manifest.contributes.configuration.properties;
    const rt = props['segue.defaultRuntime'];
    assert.equal(rt.enumItemLabels?.length, rt.enum?.length);
    assert.ok(rt.enumItemLabels?.every((l) => l.trim()), 'every dropdown entry has a label');
    for (const key of ['segue.pythonPath', 'segue.home']) {
      assert.notEqual(props[key].scope, 'machine', `${key}: machine scope shows only under Remote`);
    }
    assert.notDeepEqual(manifest.categories, ['Other']);
  });
});
