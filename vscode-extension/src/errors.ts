// Turning server and launch failures into messages that say what happened and what to do.
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { ERROR_CODES, type ErrorData } from './protocol';
import { LaunchError } from './python';
import { withFix } from './format';

/** The `data` of a Segue error reply (every key optional: a reply from elsewhere may carry none). */
export function errorData(e: unknown): Partial<ErrorData> {
  return e instanceof ResponseError && e.data && typeof e.data === 'object' ? (e.data as Partial<ErrorData>) : {};
}

export function isCode(e: unknown, code: number): boolean {
  return e instanceof ResponseError && e.code === code;
}

/** Message and suggested fix for a failure; pure enough to unit-test through the extension host. */
export function explain(e: unknown): { message: string; fix?: string } {
  if (e instanceof LaunchError) {
    return { message: e.message, fix: e.fix };
  }
  if (!(e instanceof ResponseError)) {
    return { message: e instanceof Error ? e.message : String(e) };
  }
  const d = errorData(e);
  switch (e.code) {
    case ERROR_CODES.unknown_session:
      return { message: `Segue no longer finds this session (${e.message}).`, fix: 'Refresh the session list.' };
    case ERROR_CODES.ambiguous_session:
      return {
        message: `That reference matches several sessions${d.candidates ? `: ${d.candidates.slice(0, 5).join(', ')}` : ''}.`,
        fix: 'Pick the session from the list instead.',
      };
    case ERROR_CODES.malformed:
      return { message: 'That is not a Segue handoff token.', fix: 'Paste the whole token, starting with h_.' };
    case ERROR_CODES.unknown:
      return {
        message: 'Segue does not know this handoff token.',
        fix: 'Check that the CLI and this editor use the same Segue home (segue.home / SEGUE_HOME), or emit a new token.',
      };
    case ERROR_CODES.expired:
      return { message: 'This handoff token has expired.', fix: 'Emit a new token from the other surface.' };
    case ERROR_CODES.claimed:
      return { message: 'This handoff token was already claimed.', fix: 'Each token works once: emit a new one.' };
    case ERROR_CODES.revoked:
      return { message: 'This handoff token was revoked.', fix: 'Emit a new token from the other surface.' };
    case ERROR_CODES.missing_directory:
      // (true of a directory chosen that never existed and of the session's own, deleted since; cwd null: the
      // session recorded none, resume_blocker no_directory)
      return d.cwd
        ? {
            message: `The directory does not exist: ${d.cwd}.`,
            fix: 'Restore the directory, or choose another directory to start a new session there from the brief.',
          }
        : { message: 'This session recorded no directory.', fix: 'Choose the directory to resume it in.' };
    case ERROR_CODES.missing_cli:
      return {
        message: `The ${d.runtime ?? 'runtime'} CLI is not installed or not on PATH.`,
        // The server's hint is a sentence ("install Cline: npm install -g cline"): capitalised, it is the fix.
        fix: d.install ? `${d.install.charAt(0).toUpperCase()}${d.install.slice(1)}` : 'Install it, then try again.',
      };
    case ERROR_CODES.bad_target:
      return { message: `Segue cannot resume there: ${e.message}` };
    case ERROR_CODES.unsafe_directory:
    case ERROR_CODES.permission_denied:
      return { message: e.message, fix: "Check the ownership and permissions of Segue's state directory (segue.home)." };
    case ERROR_CODES.invalid_params:
      return { message: `Segue rejected the request: ${e.message}` };
    default:
      return { message: `Segue failed: ${e.message}`, fix: 'See the Segue log for details.' };
  }
}

/** The command part of an install hint: what follows the last ": ", else the whole hint. */
export function installCommand(hint: string): string {
  const i = hint.lastIndexOf(': ');
  return i >= 0 ? hint.slice(i + 2).trim() : hint.trim();
}

/** Show a failure with the actions that can fix it; returns the chosen action label, if any. */
export async function showError(e: unknown, log: vscode.LogOutputChannel, extra: string[] = []): Promise<string | undefined> {
  const { message, fix } = explain(e);
  log.error(`${message}${fix ? ` — ${fix}` : ''}`);
  const actions = [...extra];
  const d = errorData(e);
  if (d.install) {
    actions.push('Copy Install Command');
  }
  if (e instanceof LaunchError) {
    actions.push('Open Settings');
  }
  actions.push('Show Log');
  const choice = await vscode.window.showErrorMessage(withFix(message, fix), ...actions);
  if (choice === 'Copy Install Command' && d.install) {
    await vscode.env.clipboard.writeText(installCommand(d.install));
  } else if (choice === 'Open Settings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'segue.');
  } else if (choice === 'Show Log') {
    log.show(true);
  }
  return choice;
}
