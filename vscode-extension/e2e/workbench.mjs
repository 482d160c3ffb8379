// Driving the VS Code 1.139 web workbench: palette, quick picks, dialogs, editors, terminals.
import { budget, sleep, waitFor } from './lib.mjs';

export const text = async (loc) => (await loc.innerText()).replace(/\u00a0/g, ' ');

export async function quiet(page) {
  for (let i = 0; i < 3; i++) {
    if (!(await page.locator('.quick-input-widget:visible, .monaco-dialog-box:visible').count())) return;
    await page.keyboard.press('Escape');
    await sleep(150);
  }
}

/**
 * Run a palette command and wait until the palette has handed over: its input no longer reads `>title`
 * (the command ran and closed it, or opened its own quick input). A keypress lost while the machine is busy
 * is retried instead of leaving the next wait to time out on a title that never comes.
 */
export async function runCommand(page, title) {
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    try {
      await quiet(page);
      await page.keyboard.press('F1');
      await input.waitFor({ state: 'visible', timeout: budget(5_000) });
      await input.fill(`>${title}`, { timeout: budget(5_000) });
      // Click the row itself: Enter runs the top row, which may be a longer title that also matches.
      const row = page.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }) }).first();
      await row.waitFor({ timeout: budget(10_000) });
      await row.click();
      await waitFor(`the palette to run "${title}"`, async () => {
        if (!(await input.isVisible())) return true;
        return (await input.inputValue()) !== `>${title}`;
      }, 10_000, 100);
      return;
    } catch (e) {
      if (attempt >= 3) throw new Error(`running "${title}" from the palette: ${e.message}`);
      await sleep(500);
    }
  }
}

/** Wait for a quick pick whose title contains `title` to finish loading; returns its input. */
export async function quickPick(page, title, { rows = true } = {}) {
  const t0 = Date.now();
  const shown = page.locator('.quick-input-widget .quick-input-title', { hasText: title });
  await shown.waitFor({ state: 'visible', timeout: budget(30_000) }).catch((e) => {
    throw new Error(`quick input "${title}" did not appear within ${Date.now() - t0} ms: ${e.message.split('\n')[0]}`);
  });
  if (rows) {
    await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ state: 'visible', timeout: budget(30_000) });
  }
  return page.locator('.quick-input-widget input');
}

/**
 * Run a palette command and wait for its quick pick's rows. A terminal that a step before started can take the
 * focus a few seconds later, and a quick pick closes when it loses the focus: then the command runs once more.
 */
export async function openQuickPick(page, command, title) {
  for (let attempt = 1; ; attempt++) {
    await runCommand(page, command);
    const widget = page.locator('.quick-input-widget');
    const rows = page.locator('.quick-input-list .monaco-list-row').first();
    await quickPick(page, title, { rows: false });
    const t0 = Date.now();
    const got = await Promise.race([
      rows.waitFor({ state: 'visible', timeout: budget(30_000) }).then(() => 'rows'),
      widget.waitFor({ state: 'hidden', timeout: budget(30_000) }).then(() => 'hidden'),
    ]).catch((e) => {
      throw new Error(`quick pick "${title}" showed no rows within ${Date.now() - t0} ms: ${e.message.split('\n')[0]}`);
    });
    if (got === 'rows') return page.locator('.quick-input-widget input');
    if (attempt >= 2) throw new Error(`quick pick "${title}" closed twice before its rows appeared (the focus moved)`);
  }
}

export async function rowsText(page) {
  return page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
}

/** The first quick-pick row containing every one of `needles`. */
export function rowWith(page, needles) {
  let row = page.locator('.quick-input-list .monaco-list-row');
  for (const n of needles) row = row.filter({ hasText: n });
  return row.first();
}

/** Type a filter into the open quick pick and accept the first row containing all `needles`. */
export async function pickRow(page, filter, needles = [filter]) {
  await page.locator('.quick-input-widget input').fill(filter);
  const row = rowWith(page, needles);
  await row.waitFor({ state: 'visible', timeout: budget(15_000) });
  await row.click();
}

export async function dialog(page) {
  const box = page.locator('.monaco-dialog-box');
  await box.waitFor({ state: 'visible', timeout: budget(30_000) });
  return box;
}

export async function clickDialogButton(page, label) {
  await page.locator('.monaco-dialog-box .dialog-buttons .monaco-button', { hasText: label }).first().click();
  await page.locator('.monaco-dialog-box').waitFor({ state: 'hidden' });
}

export async function activeTab(page) {
  return (await text(page.locator('.editor-group-container.active .tabs-container .tab.active').first())).replace(/\s+/g, '');
}

export async function activeEditorLines(page) {
  return text(page.locator('.editor-group-container.active .monaco-editor .view-lines').first());
}

/** Search the whole active editor with the find widget (only visible lines are in the DOM). */
export async function activeEditorContains(page, needle) {
  await page.locator('.editor-group-container.active .monaco-editor').first().click({ position: { x: 200, y: 10 } });
  await page.keyboard.press('Control+f');
  const find = page.locator('.editor-group-container.active .find-widget textarea, .editor-group-container.active .find-widget input').first();
  await find.waitFor({ state: 'visible' });
  await find.fill(needle);
  const count = page.locator('.editor-group-container.active .find-widget .matchesCount').first();
  const result = await waitFor('the find widget count', async () => {
    const t = (await count.innerText()).trim();
    return t && !/^\?/.test(t) ? t : undefined;
  }, 10_000);
  await page.keyboard.press('Escape');
  return !/no results/i.test(result);
}
