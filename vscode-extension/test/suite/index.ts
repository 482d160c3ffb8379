// Entry point the extension host calls (`extensionTestsPath`): runs the mocha suite, records per-test results.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', timeout: 60_000, color: false, reporter: 'spec' });
  mocha.addFile(path.join(__dirname, 'extension.test.js'));
  mocha.addFile(path.join(__dirname, 'search.test.js'));
  const results: { passed: string[]; failed: { title: string; error: string }[] } = { passed: [], failed: [] };
  const write = () => {
    const dir = process.env.SEGUE_TEST_MARKER_DIR;
    if (dir) {
      fs.writeFileSync(path.join(dir, 'host-results.json'), JSON.stringify(results, null, 2));
    }
  };
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      write();
      if (failures) {
        reject(new Error(`${failures} tests failed.`));
      } else {
        resolve();
      }
    });
    runner.on('pass', (t) => results.passed.push(t.fullTitle()));
    runner.on('fail', (t, err: unknown) => results.failed.push({ title: t.fullTitle(), error: String((err as Error)?.stack ?? err) }));
  });
}
