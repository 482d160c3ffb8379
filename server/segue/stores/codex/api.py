"""The Codex CLI reader's public names (loaded on first use through `segue.stores.codex`)."""


from segue.stores.codex.discovery import open_rollouts as open_rollouts
from segue.stores.codex.reader import CodexReader as CodexReader
from segue.stores.codex.reader import held_inodes as held_inodes
from segue.stores.codex.records import ZstdMissing as ZstdMissing
from segue.stores.codex.records import decode_records as decode_records
from segue.stores.codex.records import iter_raw_lines as iter_raw_lines
from segue.stores.codex.records import loads_line as loads_line
from segue.stores.codex.records import normalize as normalize
from segue.stores.codex.records import open_rollout as open_rollout
from segue.stores.codex.steps import StepBuilder as StepBuilder
from segue.stores.codex.summary import uuid_from_name as uuid_from_name
from segue.stores.codex.text import DEEP_LIMIT as DEEP_LIMIT
from segue.stores.codex.text import RUNTIME as RUNTIME
from segue.stores.codex.text import command_text as command_text
from segue.stores.codex.text import event_request as event_request
from segue.stores.codex.text import exit_code_from_output as exit_code_from_output
from segue.stores.codex.text import is_context as is_context
from segue.stores.codex.text import patch_changes as patch_changes
from segue.stores.codex.text import shell_writes as shell_writes
from segue.stores.codex.text import unwrap_request as unwrap_request
from segue.stores.codex.text import user_item_request as user_item_request
